//! The npm package's generated surface (`bindings/node/`).

use anyhow::Result;

use super::{Generated, Surface};

/// The TypeScript files made from `surface`.
pub(crate) fn emit(_surface: &Surface) -> Result<Vec<Generated>> {
    Ok(Vec::new())
}
