//! Integration tests of the contract: what its operations answer to inputs no test of a
//! single operation thinks of.

mod boundary;
mod huge_inputs;
