//! The Python package's generated surface (`bindings/python/python/agent_memory/`).

use anyhow::Result;

use super::{Generated, Surface};

/// The Python files made from `surface`.
pub(crate) fn emit(_surface: &Surface) -> Result<Vec<Generated>> {
    Ok(Vec::new())
}
