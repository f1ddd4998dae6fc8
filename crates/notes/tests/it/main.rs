//! Integration tests of `notes`: every command's documented texts on each store, traversal
//! and size attacks, secrets, the SDKs' wordings, and editors on separate connections losing no edit.

mod attacks;
mod commands;
mod concurrent;
mod evidence;
mod support;
mod wordings;
