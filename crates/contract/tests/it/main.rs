//! Integration tests of the contract: its operations called from JSON as every door calls
//! them, with their answers (success and each kind of error) snapshotted, and what they answer
//! to inputs no test of a single operation thinks of.

mod boundary;
mod browser;
mod calls;
mod huge_inputs;
mod poisoning;
mod review;
mod screen_corpus;
mod trajectory;
mod turns;
