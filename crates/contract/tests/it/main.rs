//! Integration tests of the contract: what its operations answer to inputs no test of a
//! single operation thinks of.

mod huge_inputs;
