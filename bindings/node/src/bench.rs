//! Bench builds only (feature `bench`): a contract operation timed in Rust inside the addon,
//! so that `cargo xtask bench` can put the same call from JavaScript next to it, in the same
//! process, on the same store and allocator. The difference is what the package adds to a call.

use std::time::Instant;

use napi::bindgen_prelude::Result;
use napi_derive::napi;

use crate::{NativeStore, call_text};

#[napi]
impl NativeStore {
    /// Runs operation `name` on each of `inputs` (JSON texts) in turn, as
    /// [`NativeStore::call_json_sync`] does, output text included, but without crossing into
    /// JavaScript, and answers each call's time in microseconds.
    #[napi]
    pub fn time_calls_json_sync(&self, name: String, inputs: Vec<String>) -> Result<Vec<f64>> {
        let store = self.store()?;
        inputs
            .iter()
            .map(|input| {
                let start = Instant::now();
                let output = call_text(&store, self.now, &name, input)?;
                std::hint::black_box(output);
                Ok(start.elapsed().as_secs_f64() * 1e6)
            })
            .collect()
    }
}
