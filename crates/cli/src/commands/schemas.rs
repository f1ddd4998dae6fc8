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

/// Every schema of the JSON contract: the operations' and those of what the commands print.
pub(crate) fn all() -> Vec<(String, schemars::Schema)> {
    let mut all = ops::schemas();
    all.extend(super::schemas());
    all
}

pub(crate) fn run(args: &SchemasArgs, _global: &GlobalArgs) -> Result<()> {
    let schemas = all();
    let Some(dir) = &args.out else {
        let all: serde_json::Map<String, serde_json::Value> = schemas
            .into_iter()
            .map(|(name, schema)| (name, schema.to_value()))
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    use crate::ops;

    fn committed() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas")
    }

    /// The schemas under `schemas/` are exactly the generated ones: a changed type without a
    /// regenerated schema fails here (`agent-memory schemas --out schemas` regenerates them).
    #[test]
    fn committed_schemas_match_the_generated_ones() {
        let dir = committed();
        let mut expected = BTreeSet::new();
        for (name, schema) in super::all() {
            let file = format!("{name}.json");
            let generated = ops::schema_text(&schema).expect("schema text");
            let found = std::fs::read_to_string(dir.join(&file)).unwrap_or_default();
            assert!(
                found == generated,
                "schemas/{file} differs from the generated schema; run \
                 `cargo run -p agent-memory-cli -- schemas --out schemas`"
            );
            expected.insert(file);
        }
        let present: BTreeSet<String> = std::fs::read_dir(&dir)
            .expect("schemas folder")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            present, expected,
            "schemas/ holds files no operation generates"
        );
    }

    /// Every schema of the contract is portable (`ops::portable`): no null types or type
    /// arrays, no bare booleans or untyped values, only integer formats clients know.
    #[test]
    fn every_schema_is_portable() {
        for (name, schema) in super::all() {
            let problems = ops::portable::problems(&schema.to_value());
            assert!(problems.is_empty(), "schemas/{name}.json: {problems:#?}");
        }
    }
}
