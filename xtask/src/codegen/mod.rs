//! `cargo xtask codegen [--check]`: every door's surface written from the contract's operation
//! table (`agent_memory_contract::operations::table`) and its error kinds.
//!
//! Each emitter (one module per language) turns the [`Surface`] into files: the Python
//! package's methods, stubs and exception classes, the TypeScript package's methods, types and
//! error classes. `codegen` writes them; `codegen --check` writes nothing and fails, naming the
//! files and the command to run, when a committed file differs from what the table makes. CI
//! runs the check, so a door can never drift from the table. The TypeScript shapes of
//! `schemas/` are json-schema-to-typescript's, so both also run the npm package's
//! `scripts/generate-types.mjs` (see `crate::node::schema_types`).

mod node;
mod python;

use std::path::{Path, PathBuf};

use agent_memory_contract::operations::{Effect, table};
use agent_memory_contract::{ErrorKind, schema_of};
use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::workspace_root;

/// One operation as the emitters see it.
#[derive(Debug, Clone)]
pub(crate) struct OperationView {
    /// The contract's name (`trajectory_record`).
    pub(crate) name: &'static str,
    /// Its family (`trajectory`, ..., `admin`).
    pub(crate) family: &'static str,
    /// When to call it.
    pub(crate) description: &'static str,
    /// `reads`, `writes` or `deletes`.
    pub(crate) effect: &'static str,
    /// Whether the MCP server lists it.
    pub(crate) mcp: bool,
    /// The Python method.
    pub(crate) python: String,
    /// The Node method: `group.method` or `method`.
    pub(crate) node: String,
    /// The command line's words.
    pub(crate) cli: String,
    /// The stem of its input schema (`trajectory_record.input`), if it takes input.
    pub(crate) input: Option<String>,
    /// The stem of its output schema (`trajectory_record.output`).
    pub(crate) output: String,
    /// The title of its input schema (the type's name, `RecordInput`).
    pub(crate) input_title: Option<String>,
    /// The title of its output schema (`RecordOutput`).
    pub(crate) output_title: String,
}

/// One kind of error: its word and what it means.
#[derive(Debug, Clone)]
pub(crate) struct ErrorView {
    /// The word on the wire (`invalid_input`; `error` for the catch-all).
    pub(crate) kind: &'static str,
    /// Its documentation, from `schemas/error.json`.
    pub(crate) meaning: String,
}

/// What the emitters make the doors from.
#[derive(Debug, Clone)]
pub(crate) struct Surface {
    /// Every operation, in the table's order.
    pub(crate) operations: Vec<OperationView>,
    /// Every error kind, in `ErrorKind::ALL`'s order.
    pub(crate) errors: Vec<ErrorView>,
}

/// The surface of the contract as this build of it has it.
pub(crate) fn surface() -> Result<Surface> {
    let title = |schema: &schemars::Schema| -> Result<String> {
        schema
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .context("a schema without a title")
    };
    let operations = table()
        .iter()
        .map(|op| {
            let input_schema = op.input_schema();
            Ok(OperationView {
                name: op.name,
                family: op.family(),
                description: op.description,
                effect: match op.effect {
                    Effect::Reads => "reads",
                    Effect::Writes => "writes",
                    Effect::Deletes => "deletes",
                },
                mcp: op.mcp,
                python: op.python.clone(),
                node: op.node.clone(),
                cli: op.cli.clone(),
                input: input_schema.as_ref().map(|_| format!("{}.input", op.name)),
                output: format!("{}.output", op.output),
                input_title: input_schema.as_ref().map(title).transpose()?,
                output_title: title(&op.output_schema())?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Surface {
        operations,
        errors: error_views()?,
    })
}

/// Every error kind with the documentation its variant has in the schema.
fn error_views() -> Result<Vec<ErrorView>> {
    let schema = serde_json::to_value(schema_of::<ErrorKind>())?;
    let variants = schema["oneOf"]
        .as_array()
        .context("ErrorKind's schema has no oneOf")?;
    ErrorKind::ALL
        .iter()
        .map(|kind| {
            let word = kind.as_str();
            let meaning = variants
                .iter()
                .find(|v| v["const"] == word)
                .and_then(|v| v["description"].as_str())
                .with_context(|| format!("error kind {word} has no documentation"))?;
            Ok(ErrorView {
                kind: word,
                meaning: meaning.split_whitespace().collect::<Vec<_>>().join(" "),
            })
        })
        .collect()
}

/// A generated file: where it goes (relative to the workspace root) and its text.
pub(crate) struct Generated {
    pub(crate) path: PathBuf,
    pub(crate) text: String,
}

/// Every file the emitters make from `surface`.
pub(crate) fn generate(surface: &Surface) -> Result<Vec<Generated>> {
    let mut files = python::emit(surface)?;
    files.extend(node::emit(surface)?);
    Ok(files)
}

/// The line every generated file opens with (in the comment syntax of its language).
pub(crate) const HEADER: &str =
    "Generated by `cargo xtask codegen` from the contract's operation table; do not edit.";

/// `cargo xtask codegen [--check]`.
pub(crate) fn run(args: &[String]) -> Result<()> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        other => bail!("`cargo xtask codegen` takes only --check (got {other:?})"),
    };
    let root = workspace_root();
    let files = generate(&surface()?)?;
    if check {
        check_files(&root, &files)?;
        // The TypeScript shapes of `schemas/`, made by json-schema-to-typescript (Node.js).
        return crate::node::schema_types(true);
    }
    for file in &files {
        let path = root.join(&file.path);
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder)
                .with_context(|| format!("creating {}", folder.display()))?;
        }
        std::fs::write(&path, &file.text).with_context(|| format!("writing {}", path.display()))?;
    }
    println!("codegen: wrote {} file(s)", files.len());
    python::generate_types(&root)?;
    crate::node::schema_types(false)
}

/// Fails, naming every file that differs and the command that rewrites them.
fn check_files(root: &Path, files: &[Generated]) -> Result<()> {
    let stale: Vec<String> = files
        .iter()
        .filter(|file| {
            std::fs::read_to_string(root.join(&file.path))
                .ok()
                .as_deref()
                != Some(&file.text)
        })
        .map(|file| file.path.display().to_string())
        .collect();
    if !stale.is_empty() {
        bail!(
            "generated files differ from the operation table: {}\nrun `cargo xtask codegen` and commit the result",
            stale.join(", ")
        );
    }
    println!("codegen: {} generated file(s) are current", files.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The surface names every operation of the table, each with its schemas' titles, and
    /// every error kind with its documentation.
    #[test]
    fn the_surface_covers_the_table_and_every_error_kind() {
        let surface = surface().expect("surface");
        assert_eq!(surface.operations.len(), table().len());
        let record = surface
            .operations
            .iter()
            .find(|op| op.name == "trajectory_record")
            .expect("trajectory_record");
        assert_eq!(record.input_title.as_deref(), Some("RecordInput"));
        assert_eq!(record.output_title, "RecordOutput");
        let list = surface
            .operations
            .iter()
            .find(|op| op.name == "memory_list")
            .expect("memory_list");
        assert_eq!(
            (list.input.as_deref(), list.python.as_str()),
            (None, "list")
        );
        let kinds: Vec<&str> = surface.errors.iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [
                "usage",
                "invalid_input",
                "not_found",
                "conflict",
                "corrupt",
                "io",
                "database",
                "error"
            ]
        );
        assert!(surface.errors.iter().all(|e| e.meaning.ends_with('.')));
    }

    /// The committed files are what the table makes (what `codegen --check` checks in CI).
    #[test]
    fn the_committed_files_are_current() {
        let files = generate(&surface().expect("surface")).expect("generated");
        check_files(&workspace_root(), &files).expect("run `cargo xtask codegen`");
    }
}
