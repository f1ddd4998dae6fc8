//! The Python package's generated surface (`bindings/python/python/agent_memory/`).
//!
//! Three files, each from the [`Surface`]:
//!
//! - `_store.py`: `StoreOperations` and `AsyncStoreOperations`, one method per operation
//!   (named as the table's `python` says, its docstring the operation's description), each
//!   running its operation by name through the store's one dispatch, `call`.
//!   `agent_memory.Store` and `agent_memory.aio.Store` inherit them and add only what is not
//!   an operation (opening, `call`, `location`, `trajectory_record_episode`).
//! - `_store.pyi`: the same methods typed with the `TypedDict`s of `agent_memory.types`
//!   (module: the schema's stem with `.` as `_`; class: the schema's title), which
//!   `generate_types.py` writes from `schemas/`.
//! - `errors.py`: `agent_memory.Error` and one subclass per error kind, its docstring the
//!   kind's documentation, and `from_contract`, the one lookup of a class by kind that the
//!   native module raises every error through.
//!
//! Every file stays valid at Python 3.9, the oldest the wheel claims: `typing`'s generic
//! aliases, no `X | Y`.
//!
//! [`generate_types`] is the other half of `cargo xtask codegen`: the `TypedDict`s
//! themselves, written by datamodel-code-generator (a PyPI tool, so it runs only when
//! writing, never in `--check`; `cargo xtask python` checks them).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Result, bail};

use super::{ErrorView, Generated, HEADER, OperationView, Surface};

/// Where the package's Python lives, relative to the workspace root.
const PACKAGE: &str = "bindings/python/python/agent_memory";

/// How wide a docstring's lines are, its indentation included.
const WIDTH: usize = 96;

/// The Python files made from `surface`.
pub(crate) fn emit(surface: &Surface) -> Result<Vec<Generated>> {
    Ok(vec![
        Generated {
            path: PathBuf::from(PACKAGE).join("_store.py"),
            text: methods(&surface.operations),
        },
        Generated {
            path: PathBuf::from(PACKAGE).join("_store.pyi"),
            text: stubs(&surface.operations)?,
        },
        Generated {
            path: PathBuf::from(PACKAGE).join("errors.py"),
            text: errors(&surface.errors)?,
        },
    ])
}

/// Rewrites the `TypedDict`s of `agent_memory.types` from `schemas/` with
/// `bindings/python/generate_types.py`, in the tools environment `cargo xtask python` uses
/// (made on first use).
pub(crate) fn generate_types(root: &Path) -> Result<()> {
    let Some(python) = crate::mcp_python::find_python()? else {
        bail!(
            "python3 is not installed: the TypedDicts of {PACKAGE}/types were not regenerated (install python3 with venv)"
        );
    };
    let tools = crate::python::tools(root, &python)?;
    crate::mcp_python::run_checked(
        Command::new(&tools).arg(root.join("bindings/python/generate_types.py")),
        "generating the TypedDicts from schemas/",
    )?;
    println!("codegen: wrote {PACKAGE}/types from schemas/");
    Ok(())
}

/// `_store.py`: the methods of both stores.
fn methods(operations: &[OperationView]) -> String {
    let mut out = format!(
        r#"# {HEADER}
"""Every operation of the contract as a method: :class:`StoreOperations` are the methods of
:class:`agent_memory.Store`, :class:`AsyncStoreOperations` their coroutines in
:class:`agent_memory.aio.Store`. Each runs its operation by name through the store's one
dispatch, ``call``; ``_store.pyi`` types their inputs and outputs."""

from typing import Any, Dict, Optional

__all__ = ["StoreOperations", "AsyncStoreOperations"]


class StoreOperations:
    """The methods of :class:`agent_memory.Store`, one per operation of the contract."""

    __slots__ = ()

    def call(self, operation: str, input: Optional[Dict[str, Any]] = None) -> Any:
        """Runs the contract's ``operation`` on ``input`` and returns its output."""
        raise NotImplementedError
"#
    );
    for op in operations {
        out.push_str(&method(op, ""));
    }
    out.push_str(
        r#"

class AsyncStoreOperations:
    """The methods of :class:`agent_memory.aio.Store`: each operation as a coroutine."""

    __slots__ = ()

    async def call(self, operation: str, input: Optional[Dict[str, Any]] = None) -> Any:
        """Runs the contract's ``operation`` on ``input`` and returns its output."""
        raise NotImplementedError
"#,
    );
    for op in operations {
        out.push_str(&method(op, "async "));
    }
    out
}

/// One method of `op`, `asynchronous` being `"async "` or empty.
fn method(op: &OperationView, asynchronous: &str) -> String {
    let wait = if asynchronous.is_empty() {
        ""
    } else {
        "await "
    };
    let (parameter, argument) = match op.input {
        Some(_) => (", input: Dict[str, Any]", ", input"),
        None => ("", ""),
    };
    format!(
        "\n    {asynchronous}def {method}(self{parameter}) -> Dict[str, Any]:\n{doc}        return {wait}self.call({name:?}{argument})\n",
        method = op.python,
        doc = docstring(op.description, 8),
        name = op.name,
    )
}

/// `_store.pyi`: the methods typed with the schemas' `TypedDict`s.
fn stubs(operations: &[OperationView]) -> Result<String> {
    let mut modules: Vec<String> = Vec::new();
    let mut signatures = Vec::new();
    for op in operations {
        let input = match (&op.input, &op.input_title) {
            (Some(stem), Some(title)) => {
                let module = module_of(stem);
                let typed = format!(", input: {module}.{title}");
                modules.push(module);
                typed
            }
            (None, None) => String::new(),
            _ => bail!("{}: an input schema without a title", op.name),
        };
        let module = module_of(&op.output);
        let output = format!("{module}.{}", op.output_title);
        modules.push(module);
        signatures.push((op.python.as_str(), input, output));
    }
    modules.sort();
    modules.dedup();
    let mut out = format!(
        r#"# {HEADER}
"""The types of the store's methods: each operation's input and output are the TypedDicts
``agent_memory.types`` generates from the contract's schemas."""

from typing import Any, Dict, Optional

"#
    );
    for module in &modules {
        let _ = writeln!(out, "from .types import {module}");
    }
    for (class, asynchronous) in [("StoreOperations", ""), ("AsyncStoreOperations", "async ")] {
        let _ = write!(
            out,
            "\nclass {class}:\n    {asynchronous}def call(self, operation: str, input: Optional[Dict[str, Any]] = None) -> Any: ...\n"
        );
        for (method, input, output) in &signatures {
            let _ = writeln!(
                out,
                "    {asynchronous}def {method}(self{input}) -> {output}: ..."
            );
        }
    }
    Ok(out)
}

/// The module of `agent_memory.types` a schema's stem is written to
/// (`browser_run.output` is `browser_run_output`).
fn module_of(stem: &str) -> String {
    stem.replace('.', "_")
}

/// `errors.py`: one exception class per error kind, and the lookup by kind.
fn errors(kinds: &[ErrorView]) -> Result<String> {
    let Some(catch_all) = kinds.iter().find(|k| k.kind == "error") else {
        bail!("no error kind `error`, the base class's own");
    };
    let classes: Vec<(String, &ErrorView)> = kinds
        .iter()
        .filter(|k| k.kind != "error")
        .map(|k| (class_of(k.kind), k))
        .collect();
    let mut names = vec!["Error".to_owned()];
    names.extend(classes.iter().map(|(name, _)| name.clone()));
    let listed: String = names.iter().map(|n| format!("    {n:?},\n")).collect();
    let tuple: String = names.iter().map(|n| format!("    {n},\n")).collect();
    let mut out = format!(
        r#"# {HEADER}
"""The exceptions of agent_memory: one class per kind of the contract's errors.

Every error a store call raises is an :class:`Error` with the contract's ``kind`` (a stable
word a program can branch on), ``message`` (what a person reads, the command line's text)
and ``input`` (the file, field or name it is about, or ``None``). Each kind has a subclass,
so ``except agent_memory.NotFoundError`` catches only that kind.
"""

from typing import Dict, Optional, Type

__all__ = [
{listed}]


class Error(Exception):
{doc}
    kind: str = "error"

    def __init__(self, message: str, kind: Optional[str] = None, input: Optional[str] = None):
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind
        self.input = input

    def __repr__(self) -> str:
        return f"{{type(self).__name__}}({{self.message!r}}, kind={{self.kind!r}}, input={{self.input!r}})"
"#,
        doc = docstring(
            &format!(
                "An error of the memory store: ``kind``, ``message`` and ``input``; the base of every kind's class. Its own kind, ``error``, is {}",
                lowercase_first(&catch_all.meaning)
            ),
            4
        ),
    );
    for (name, kind) in &classes {
        let bases = ["Error"]
            .into_iter()
            .chain(python_bases(kind.kind).iter().copied())
            .collect::<Vec<_>>()
            .join(", ");
        let _ = write!(
            out,
            "\n\nclass {name}({bases}):\n{doc}\n    kind = {word:?}\n",
            doc = docstring(&kind.meaning, 4),
            word = kind.kind,
        );
    }
    let _ = write!(
        out,
        r#"

_BY_KIND: Dict[str, Type[Error]] = {{cls.kind: cls for cls in (
{tuple})}}


def from_contract(kind: str, message: str, input: Optional[str] = None) -> Error:
    """The exception for a contract error of ``kind`` (an unknown kind is a plain Error)."""
    return _BY_KIND.get(kind, Error)(message, kind, input)
"#,
    );
    Ok(out)
}

/// The class of error kind `kind`: its words capitalized, then `Error` (`InvalidInputError`).
fn class_of(kind: &str) -> String {
    let mut name: String = kind
        .split('_')
        .map(|word| {
            let mut letters = word.chars();
            letters
                .next()
                .map(|first| first.to_uppercase().chain(letters).collect::<String>())
                .unwrap_or_default()
        })
        .collect();
    name.push_str("Error");
    name
}

/// The built-in exceptions a kind's class also derives from, so that code catching Python's
/// own (`except ValueError`) catches it too.
fn python_bases(kind: &str) -> &'static [&'static str] {
    match kind {
        "invalid_input" => &["ValueError"],
        "not_found" => &["LookupError"],
        _ => &[],
    }
}

fn lowercase_first(text: &str) -> String {
    let mut letters = text.chars();
    letters
        .next()
        .map(|first| first.to_lowercase().chain(letters).collect())
        .unwrap_or_default()
}

/// `text` as a docstring indented by `indent` spaces, its lines wrapped at [`WIDTH`].
fn docstring(text: &str, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let escaped = text.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"");
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in escaped.split_whitespace() {
        // The first line also holds the opening quotes, the last the closing ones.
        let room = WIDTH - indent - 3 - if lines.is_empty() { 3 } else { 0 };
        if !line.is_empty() && line.len() + 1 + word.len() > room {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let open = if i == 0 { "\"\"\"" } else { "" };
        let close = if i + 1 == lines.len() { "\"\"\"" } else { "" };
        let _ = writeln!(out, "{pad}{open}{line}{close}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_is_a_class_name() {
        assert_eq!(class_of("invalid_input"), "InvalidInputError");
        assert_eq!(class_of("io"), "IoError");
        assert_eq!(class_of("not_found"), "NotFoundError");
    }

    #[test]
    fn a_docstring_wraps_and_escapes() {
        let doc = docstring(r#"A "quoted" \ word and """three""" more"#, 4);
        assert_eq!(
            doc,
            "    \"\"\"A \"quoted\" \\\\ word and \\\"\\\"\\\"three\\\"\\\"\\\" more\"\"\"\n"
        );
        let long = "word ".repeat(40);
        let doc = docstring(&long, 8);
        assert!(doc.lines().count() > 1, "{doc}");
        assert!(doc.lines().all(|line| line.len() <= WIDTH), "{doc}");
        assert!(doc.starts_with("        \"\"\"word") && doc.ends_with("word\"\"\"\n"));
    }

    /// Each file opens with the generated header and names every operation or kind.
    #[test]
    fn every_operation_has_a_method_and_a_stub_and_every_kind_a_class() {
        let surface = super::super::surface().expect("surface");
        let files = emit(&surface).expect("emitted");
        let text = |name: &str| {
            &files
                .iter()
                .find(|f| f.path.ends_with(name))
                .expect(name)
                .text
        };
        for file in &files {
            assert!(
                file.text.starts_with(&format!("# {HEADER}\n")),
                "{:?}",
                file.path
            );
        }
        for op in &surface.operations {
            let sync = format!("    def {}(self", op.python);
            let asynchronous = format!("    async def {}(self", op.python);
            for name in ["_store.py", "_store.pyi"] {
                assert_eq!(text(name).matches(&sync).count(), 1, "{name} {}", op.name);
                assert_eq!(
                    text(name).matches(&asynchronous).count(),
                    1,
                    "{name} {}",
                    op.name
                );
            }
            assert!(
                text("_store.py").contains(&format!("self.call({:?}", op.name)),
                "{}",
                op.name
            );
        }
        for kind in &surface.errors {
            let errors = text("errors.py");
            assert!(
                errors.contains(&format!("    kind = {:?}\n", kind.kind))
                    || errors.contains(&format!("    kind: str = {:?}\n", kind.kind)),
                "{}",
                kind.kind
            );
        }
        assert!(text("errors.py").contains("class InvalidInputError(Error, ValueError):"));
        assert!(text("errors.py").contains("class NotFoundError(Error, LookupError):"));
        assert!(
            text("_store.pyi")
                .contains("    def list(self) -> memory_list_output.MemoryList: ...\n")
        );
    }
}
