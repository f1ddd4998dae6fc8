//! The npm package's generated surface (`bindings/node/ts/generated/`): the `Store` methods
//! table (`methods.ts`) and their types (`operations.ts`), and one `Error` subclass per error
//! kind (`errors.ts`).
//!
//! The shapes of inputs and outputs are not written here: `scripts/generate-types.mjs` makes
//! them from `schemas/` with json-schema-to-typescript (`schemas.ts`, one type per schema file,
//! named after the file: `trajectory_record.input.json` is `TrajectoryRecordInput`), and the
//! files written here name those types, so `tsc` fails when the two disagree.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Result, bail};

use super::{ErrorView, Generated, HEADER, OperationView, Surface};

/// Where the generated TypeScript sources go, relative to the workspace root.
const FOLDER: &str = "bindings/node/ts/generated";

/// The TypeScript files made from `surface`.
pub(crate) fn emit(surface: &Surface) -> Result<Vec<Generated>> {
    Ok(vec![
        Generated {
            path: PathBuf::from(FOLDER).join("methods.ts"),
            text: methods(surface)?,
        },
        Generated {
            path: PathBuf::from(FOLDER).join("operations.ts"),
            text: operations(surface)?,
        },
        Generated {
            path: PathBuf::from(FOLDER).join("errors.ts"),
            text: errors(&surface.errors),
        },
    ])
}

/// An operation's place on the `Store`: its group (`None`: the store itself) and method.
fn place(op: &OperationView) -> Result<(Option<&str>, &str)> {
    let (group, method) = match op.node.split_once('.') {
        Some((group, method)) => (Some(group), method),
        None => (None, op.node.as_str()),
    };
    let identifier = |word: &str| {
        word.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && word.chars().all(|c| c.is_ascii_alphanumeric())
    };
    if !group.is_none_or(identifier) || !identifier(method) || method.ends_with("Sync") {
        bail!(
            "operation {} has the Node name {:?}: expected `method` or `group.method` in camelCase, not ending in Sync",
            op.name,
            op.node
        );
    }
    Ok((group, method))
}

/// The type `scripts/generate-types.mjs` gives the schema `stem` (`trajectory_record.input`
/// is `TrajectoryRecordInput`).
fn schema_type(stem: &str) -> String {
    stem.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(pascal_word)
        .collect()
}

fn pascal_word(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_ascii_uppercase().to_string() + chars.as_str()
    })
}

/// `snake_case` as `PascalCase`.
fn pascal(snake: &str) -> String {
    snake.split('_').map(pascal_word).collect()
}

/// The input type of an operation's methods (what follows `input` in the parameter list).
fn input_parameter(op: &OperationView) -> String {
    match &op.input {
        Some(stem) => format!(": S.{}", schema_type(stem)),
        None => "?: NoInput".to_owned(),
    }
}

/// `text` as the lines of a JSDoc comment indented by `indent`, wrapped before 100 columns.
fn doc(out: &mut String, indent: &str, paragraphs: &[&str]) {
    let width = 100 - indent.len() - 3;
    let mut lines: Vec<String> = Vec::new();
    for (i, paragraph) in paragraphs.iter().enumerate() {
        if i > 0 {
            lines.push(String::new());
        }
        let mut line = String::new();
        // A `*/` would end the comment early.
        for word in paragraph.replace("*/", "*\\/").split_whitespace() {
            if !line.is_empty() && line.len() + 1 + word.len() > width {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        lines.push(line);
    }
    if let [one] = lines.as_slice()
        && one.len() + 7 <= width + 3
    {
        let _ = writeln!(out, "{indent}/** {one} */");
        return;
    }
    let _ = writeln!(out, "{indent}/**");
    for line in lines {
        if line.is_empty() {
            let _ = writeln!(out, "{indent} *");
        } else {
            let _ = writeln!(out, "{indent} * {line}");
        }
    }
    let _ = writeln!(out, "{indent} */");
}

/// An operation's pair of method signatures, indented by `indent`.
fn signatures(out: &mut String, indent: &str, op: &OperationView, method: &str) {
    let input = input_parameter(op);
    let output = format!("S.{}", schema_type(&op.output));
    let about = format!(
        "The contract's `{}` (family `{}`, {}; `{}` on the command line{}).",
        op.name,
        op.family,
        op.effect,
        op.cli,
        if op.mcp { "" } else { "; not an MCP tool" }
    );
    doc(out, indent, &[op.description, &about]);
    let _ = writeln!(out, "{indent}{method}(input{input}): Promise<{output}>");
    doc(
        out,
        indent,
        &[&format!("`{method}` on the calling thread.")],
    );
    let _ = writeln!(out, "{indent}{method}Sync(input{input}): {output}");
}

/// `methods.ts`: where each operation is on the `Store`, which its constructor reads.
fn methods(surface: &Surface) -> Result<String> {
    let mut out = String::new();
    let _ = writeln!(out, "// {HEADER}");
    out.push_str(
        "//
// Where each operation of the contract is on the `Store`: its group and camelCase method (the
// types of the methods are `operations.ts`).

import type { OperationName } from './operations.js'

/** Where an operation is on the `Store`. */
export interface MethodEntry {
  /** The contract's name. */
  readonly operation: OperationName
  /** The `Store`'s property holding the method, or `null` for a method of the store itself. */
  readonly group: string | null
  /** The method (its twin on the calling thread adds `Sync`). */
  readonly method: string
  /** Whether it takes a JSON input (else nothing, `null` or `{}`). */
  readonly takesInput: boolean
}

/** Every operation at its `Store` method, in the contract's order. */
export const METHODS: readonly MethodEntry[] = Object.freeze([
",
    );
    for op in &surface.operations {
        let (group, method) = place(op)?;
        let group = group.map_or_else(|| "null".to_owned(), |g| format!("'{g}'"));
        let _ = writeln!(
            out,
            "  {{ operation: '{}', group: {group}, method: '{method}', takesInput: {} }},",
            op.name,
            op.input.is_some()
        );
    }
    out.push_str("])\n");
    Ok(out)
}

/// `operations.ts`: each operation's input and output types, and the `Store`'s methods.
fn operations(surface: &Surface) -> Result<String> {
    let mut out = String::new();
    let _ = writeln!(out, "// {HEADER}");
    out.push_str(
        "//
// The types of every operation of the contract as a method of the `Store`: `OperationTypes`
// its input and output (the shapes of `schemas/`, in `schemas.ts`), and `StoreMethods` the
// methods a `Store` has, each a Promise with a `...Sync` twin on the calling thread.

import type * as S from './schemas.js'

/** The input of an operation that takes none: nothing, `null` or an empty object. */
export type NoInput = Record<string, never> | null

/** Each operation's input and output types, by the contract's name. */
export interface OperationTypes {
",
    );
    for op in &surface.operations {
        let input = op.input.as_deref().map_or_else(
            || "NoInput | undefined".to_owned(),
            |s| format!("S.{}", schema_type(s)),
        );
        let _ = writeln!(
            out,
            "  {}: [{input}, S.{}]",
            op.name,
            schema_type(&op.output)
        );
    }
    out.push_str(
        "}

/** The contract's name of an operation. */
export type OperationName = keyof OperationTypes
",
    );
    let mut groups: Vec<(&str, Vec<(&OperationView, &str)>)> = Vec::new();
    let mut own: Vec<(&OperationView, &str)> = Vec::new();
    for op in &surface.operations {
        let (group, method) = place(op)?;
        match group {
            None => own.push((op, method)),
            Some(group) => match groups.iter_mut().find(|(g, _)| *g == group) {
                Some((_, methods)) => methods.push((op, method)),
                None => groups.push((group, vec![(op, method)])),
            },
        }
    }
    let mut names: Vec<&str> = own.iter().map(|(_, m)| *m).collect();
    names.extend(groups.iter().map(|(g, _)| *g));
    for (group, methods) in &groups {
        let mut seen: Vec<&str> = Vec::new();
        let _ = writeln!(out);
        doc(
            &mut out,
            "",
            &[&format!(
                "`store.{group}`: the operations of the `{group}` group."
            )],
        );
        let _ = writeln!(out, "export interface {}Methods {{", pascal(group));
        for (op, method) in methods {
            if seen.contains(method) {
                bail!("two operations are the Node method {group}.{method}");
            }
            seen.push(method);
            signatures(&mut out, "  ", op, method);
        }
        out.push_str("}\n");
    }
    let _ = writeln!(out);
    out.push_str("/** Every operation of the contract, as the methods of a `Store`. */\n");
    out.push_str("export interface StoreMethods {\n");
    for (group, _) in &groups {
        doc(
            &mut out,
            "  ",
            &[&format!("The operations of the `{group}` group.")],
        );
        let _ = writeln!(out, "  readonly {group}: {}Methods", pascal(group));
    }
    for (op, method) in &own {
        signatures(&mut out, "  ", op, method);
    }
    out.push_str("}\n");
    names.sort_unstable();
    if let Some(pair) = names.windows(2).find(|pair| pair[0] == pair[1]) {
        bail!("{} is both a group and a method of the Node store", pair[0]);
    }
    Ok(out)
}

/// The class of an error kind: `invalid_input` is `InvalidInputError`, and `error`, the
/// catch-all, is the base class `AgentMemoryError` (written by hand).
fn class_of(kind: &str) -> String {
    if kind == "error" {
        "AgentMemoryError".to_owned()
    } else {
        format!("{}Error", pascal(kind))
    }
}

/// `errors.ts`: one `Error` subclass per kind, and the class of each kind.
fn errors(kinds: &[ErrorView]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "// {HEADER}");
    out.push_str(
        "//
// One `Error` subclass of `AgentMemoryError` per kind of the contract's errors, documented as
// `schemas/error.json` documents the kind, and `errorClasses`, the class of each kind.

import { AgentMemoryError } from '../agent-memory-error.js'
import type { ErrorKind } from './schemas.js'
",
    );
    for view in kinds.iter().filter(|view| view.kind != "error") {
        let class = class_of(view.kind);
        let _ = writeln!(out);
        doc(
            &mut out,
            "",
            &[&view.meaning, &format!("Its `kind` is `{}`.", view.kind)],
        );
        let _ = writeln!(out, "export class {class} extends AgentMemoryError {{");
        let _ = writeln!(
            out,
            "  static override readonly kind: ErrorKind = '{}'",
            view.kind
        );
        let _ = writeln!(out, "  declare readonly kind: '{}'", view.kind);
        out.push_str("}\n");
    }
    out.push_str(
        "
/** The class of each kind of error (`error`, the catch-all, is `AgentMemoryError` itself). */
export const errorClasses: { readonly [K in ErrorKind]: typeof AgentMemoryError } = Object.freeze({
",
    );
    for view in kinds {
        let _ = writeln!(out, "  {}: {},", view.kind, class_of(view.kind));
    }
    out.push_str("})\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::surface;

    fn view(node: &str) -> OperationView {
        OperationView {
            name: "some_operation",
            family: "admin",
            description: "Does something.",
            effect: "reads",
            mcp: true,
            python: "some_operation".to_owned(),
            node: node.to_owned(),
            cli: "some-operation".to_owned(),
            input: None,
            output: "some_operation.output".to_owned(),
            input_title: None,
            output_title: "SomeOutput".to_owned(),
        }
    }

    #[test]
    fn schema_types_are_named_as_generate_types_names_them() {
        assert_eq!(
            schema_type("trajectory_record.input"),
            "TrajectoryRecordInput"
        );
        assert_eq!(schema_type("browser_run.output"), "BrowserRunOutput");
        assert_eq!(schema_type("check.output"), "CheckOutput");
    }

    #[test]
    fn a_node_name_is_a_method_or_a_group_and_a_method() {
        assert_eq!(place(&view("list")).expect("list"), (None, "list"));
        assert_eq!(
            place(&view("browser.runStart")).expect("runStart"),
            (Some("browser"), "runStart")
        );
        for bad in [
            "",
            "a.b.c",
            "Browser.run",
            "browser.run_start",
            "listSync",
            "a.",
        ] {
            assert!(place(&view(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn every_kind_has_a_class_and_every_operation_a_method() {
        let surface = surface().expect("surface");
        let errors = errors(&surface.errors);
        for kind in &surface.errors {
            let line = format!("  {}: {},", kind.kind, class_of(kind.kind));
            assert!(errors.contains(&line), "{line}");
        }
        assert!(errors.contains("export class InvalidInputError extends AgentMemoryError {"));
        let operations = operations(&surface).expect("operations");
        let methods = methods(&surface).expect("methods");
        for op in &surface.operations {
            let (_, method) = place(op).expect("place");
            assert!(
                operations.contains(&format!("  {method}Sync(input")),
                "{}",
                op.name
            );
            assert!(
                methods.contains(&format!("  {{ operation: '{}', ", op.name)),
                "{}",
                op.name
            );
        }
        assert!(methods.contains(
            "  { operation: 'browser_run_start', group: 'browser', method: 'runStart', takesInput: true },"
        ));
        assert!(operations.contains("  memory_list: [NoInput | undefined, S.MemoryListOutput]"));
    }

    #[test]
    fn long_documentation_wraps_and_cannot_end_the_comment() {
        let mut out = String::new();
        doc(&mut out, "  ", &["a */ b"]);
        assert_eq!(out, "  /** a *\\/ b */\n");
        let mut out = String::new();
        doc(&mut out, "", &[&"word ".repeat(40)]);
        assert!(out.lines().all(|line| line.len() <= 100), "{out}");
        assert!(out.starts_with("/**\n") && out.ends_with(" */\n"), "{out}");
    }
}
