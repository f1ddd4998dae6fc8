//! `agent-memory schemas`: the JSON Schema of every input and output of the JSON contract.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::GlobalArgs;
use crate::ops;

/// Where to put the schemas.
#[derive(Debug, clap::Args)]
pub(crate) struct SchemasArgs {
    /// Write one `<name>.json` file per schema into this folder instead of printing them.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub(crate) fn run(args: &SchemasArgs, _global: &GlobalArgs) -> Result<()> {
    let schemas = ops::schemas();
    let Some(dir) = &args.out else {
        let all: serde_json::Map<String, serde_json::Value> = schemas
            .into_iter()
            .map(|(name, schema)| (name.to_owned(), schema.to_value()))
            .collect();
        return crate::output::print_json(&all);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, schema) in schemas {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, ops::schema_text(&schema)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
