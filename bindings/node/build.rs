//! Links the addon as Node expects: Node-API symbols resolved by the `node` process at load.

fn main() {
    napi_build::setup();
}
