//! The reference's JavaScript formats, reproduced exactly: numbers as `String(number)`
//! writes them, `JSON.stringify` output, `toISOString()` and `Date.parse`, the session
//! history's timestamp display, and string lengths and cuts in UTF-16 code units.
//!
//! These are compatibility helpers, public so tests, tools and the command line can write
//! and check the reference's formats; the memory API does not need them.

pub use crate::extract::snapshot_hash;
pub use crate::json::{Json, js_number, to_compact, to_pretty};
pub use crate::render::percent;
pub use crate::time::{iso, minute, parse_date};
pub use crate::utf16::{utf16_len, utf16_prefix};
