//! The command of every operation of the contract's table that no module of `commands/` spells
//! out with flags of its own: `agent-memory <words> [--input PATH]`, at the words the table
//! gives it (`recording next-call`), its JSON input read from a file or standard input (`-`,
//! the default), its output printed as JSON. Each top-level field of the input schema that is
//! a string, an integer, a number or a boolean is a flag as well (`--path`, `--version`,
//! `--policy`): with any flag given, the input is the object they make, and standard input is
//! not read. So every operation has a command, and a new operation has one without an edit
//! here.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Arg, ArgMatches, Command};
use serde_json::Value;

use crate::GlobalArgs;
use crate::ops::operations::{Effect, Operation, table};

/// The name of the input argument of a generated command.
const INPUT: &str = "input";

/// The operations whose words name no command of the derived command tree `root`.
fn unspelled(root: &Command) -> impl Iterator<Item = &'static Operation> + '_ {
    table()
        .iter()
        .filter(move |op| find(root, &words(op)).is_none())
}

/// An operation's command-line words.
fn words(op: &'static Operation) -> Vec<&'static str> {
    op.cli.split(' ').collect()
}

/// The command at `words` under `root`.
fn find<'c>(root: &'c Command, words: &[&str]) -> Option<&'c Command> {
    words
        .iter()
        .try_fold(root, |command, word| command.find_subcommand(word))
}

/// `root` with a command for every operation it does not spell out.
pub(crate) fn augment(root: Command) -> Command {
    let missing: Vec<&'static Operation> = unspelled(&root).collect();
    missing
        .into_iter()
        .fold(root, |root, op| insert(root, &words(op), leaf(op)))
}

/// `parent` with `leaf` at `words` below it, making the groups on the way.
fn insert(parent: Command, words: &[&'static str], leaf: Command) -> Command {
    match words {
        [] | [_] => parent.subcommand(leaf),
        [group, rest @ ..] => {
            if parent.find_subcommand(group).is_some() {
                parent.mut_subcommand(*group, |sub| insert(sub, rest, leaf))
            } else {
                let mut made = Command::new(*group).subcommand_required(true);
                if let Some(about) = group_about(group) {
                    made = made.about(about);
                }
                parent.subcommand(insert(made, rest, leaf))
            }
        }
    }
}

/// What a group made of generic commands is for, when no hand-written command says it.
fn group_about(group: &str) -> Option<&'static str> {
    match group {
        "review" => {
            Some("The write screen's review queue: what it held, approve or reject it, its policy")
        }
        _ => None,
    }
}

/// A scalar field of an operation's input, offered as a flag.
struct Field {
    name: String,
    kind: &'static str,
    help: String,
}

/// Names a flag may not take: the global flags and the input's own.
const TAKEN: &[&str] = &[INPUT, "db", "json", "now", "help"];

/// The top-level string, integer, number and boolean fields of `op`'s input schema, and its
/// objects of strings (a fingerprint), each pair a `--NAME KEY=VALUE` flag of its own.
fn fields(op: &Operation) -> Vec<Field> {
    let Some(schema) = op.input_schema() else {
        return Vec::new();
    };
    let schema = schema.as_value();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .filter(|(name, _)| !TAKEN.contains(&name.as_str()))
        .filter_map(|(name, property)| {
            let kind = match property.get("type").and_then(Value::as_str)? {
                "string" => "string",
                "integer" => "integer",
                "number" => "number",
                "boolean" => "boolean",
                "object"
                    if property
                        .get("additionalProperties")
                        .and_then(|values| values.get("type"))
                        .and_then(Value::as_str)
                        == Some("string") =>
                {
                    "pairs"
                }
                _ => return None,
            };
            let help = property
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .replace('\n', " ");
            Some(Field {
                name: name.clone(),
                kind,
                help,
            })
        })
        .collect()
}

/// The flag of an input field: `snake_case` as `--kebab-case`.
fn flag(name: &str) -> String {
    name.replace('_', "-")
}

/// The command of `op`.
fn leaf(op: &'static Operation) -> Command {
    let name = words(op).last().copied().unwrap_or(op.name);
    let mut command = Command::new(name).about(op.description);
    if !op.takes_input() {
        return command;
    }
    for field in fields(op) {
        let arg = Arg::new(field.name.clone())
            .long(flag(&field.name))
            .help(field.help)
            .conflicts_with(INPUT);
        command = command.arg(match field.kind {
            "boolean" => arg.action(clap::ArgAction::SetTrue),
            "integer" => arg
                .value_name("N")
                .value_parser(clap::value_parser!(i64))
                .allow_negative_numbers(true),
            "number" => arg
                .value_name("X")
                .value_parser(clap::value_parser!(f64))
                .allow_negative_numbers(true),
            "pairs" => arg
                .value_name("KEY=VALUE")
                .value_parser(parse_pair)
                .action(clap::ArgAction::Append),
            _ => arg.value_name(field.name.to_uppercase()),
        });
    }
    command.arg(
        Arg::new(INPUT)
            .long(INPUT)
            .value_name("PATH")
            .value_parser(clap::value_parser!(PathBuf))
            .help(format!(
                "The operation's JSON input (schemas/{}.input.json): a file, or - for standard input (the default without flags)",
                op.name
            )),
    )
}

/// `KEY=VALUE` as a pair; the key is not empty, the value may be.
fn parse_pair(text: &str) -> std::result::Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("expected KEY=VALUE, got {text:?}")),
    }
}

/// Where a generated command's input comes from.
#[derive(Debug)]
pub(crate) enum Input {
    /// The operation takes none.
    None,
    /// A JSON document in a file, or `-` for standard input.
    Document(PathBuf),
    /// The object its flags make.
    Flags(Value),
    /// Neither flags nor `--input`: standard input's document, or `{}` when standard input
    /// is a terminal or empty and the operation needs no field.
    Default,
}

/// The generated command `matches` chose below the derived tree `root`, with its input.
pub(crate) fn matched(root: &Command, matches: &ArgMatches) -> Option<(&'static Operation, Input)> {
    let mut chosen = Vec::new();
    let mut at = matches;
    while let Some((name, sub)) = at.subcommand() {
        chosen.push(name);
        at = sub;
    }
    let op = unspelled(root).find(|op| words(op) == chosen)?;
    if !op.takes_input() {
        return Some((op, Input::None));
    }
    if let Some(path) = at.try_get_one::<PathBuf>(INPUT).ok().flatten() {
        return Some((op, Input::Document(path.clone())));
    }
    let mut object = serde_json::Map::new();
    for field in fields(op) {
        let value = match field.kind {
            "boolean" => at
                .try_get_one::<bool>(&field.name)
                .ok()
                .flatten()
                .filter(|on| **on)
                .map(|on| Value::Bool(*on)),
            "integer" => at
                .try_get_one::<i64>(&field.name)
                .ok()
                .flatten()
                .map(|n| Value::from(*n)),
            "number" => at
                .try_get_one::<f64>(&field.name)
                .ok()
                .flatten()
                .map(|x| Value::from(*x)),
            "pairs" => at
                .try_get_many::<(String, String)>(&field.name)
                .ok()
                .flatten()
                .map(|pairs| {
                    Value::Object(
                        pairs
                            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                            .collect(),
                    )
                }),
            _ => at
                .try_get_one::<String>(&field.name)
                .ok()
                .flatten()
                .map(|text| Value::String(text.clone())),
        };
        if let Some(value) = value {
            object.insert(field.name, value);
        }
    }
    Some((
        op,
        if object.is_empty() {
            Input::Default
        } else {
            Input::Flags(Value::Object(object))
        },
    ))
}

/// The input of a command given neither flags nor `--input`: the document on standard input;
/// `{}` when standard input is a terminal or empty and the input requires no field.
fn default_input(op: &Operation) -> Result<Value> {
    use std::io::IsTerminal;
    let optional = op.input_schema().is_some_and(|schema| {
        schema
            .as_value()
            .get("required")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
    });
    let stdin = std::path::Path::new("-");
    if !optional {
        return crate::input::document(stdin);
    }
    if std::io::stdin().is_terminal() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    let (name, text) = crate::input::read_text(stdin)?;
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(&text).map_err(|e| {
        crate::ops::Error::invalid(&name, format!("{name}:{}:{}: {e}", e.line(), e.column())).into()
    })
}

/// Runs `op` on its input and prints its output as JSON.
pub(crate) fn run(op: &Operation, input: Input, global: &GlobalArgs) -> Result<()> {
    let value: Value = match input {
        Input::Document(path) => crate::input::document(&path)?,
        Input::Flags(value) => value,
        Input::None => Value::Null,
        Input::Default => default_input(op)?,
    };
    let store = match op.effect {
        Effect::Reads => global.open_for_reading()?,
        Effect::Writes | Effect::Deletes => global.open()?,
    };
    let output = op.call(&global.env(&store), value)?;
    crate::output::print_json(&output)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// Every operation of the table has a command at its words, spelled out or generated.
    #[test]
    fn every_operation_has_a_command_at_its_words() {
        let root = augment(crate::Cli::command());
        for op in table() {
            let command = find(&root, &words(op));
            assert!(command.is_some(), "no command `{}` for {}", op.cli, op.name);
        }
        root.debug_assert();
    }

    /// A generated command is matched back to its operation, with its input.
    #[test]
    fn a_generated_command_matches_its_operation() {
        let derived = crate::Cli::command();
        let op = unspelled(&derived)
            .find(|op| op.takes_input())
            .expect("an operation whose command is generated");
        let mut args = vec!["agent-memory"];
        args.extend(words(op));
        args.extend(["--input", "in.json"]);
        let matches = augment(crate::Cli::command())
            .try_get_matches_from(args)
            .expect("parsed");
        let (found, input) = matched(&derived, &matches).expect("matched");
        assert_eq!(found.name, op.name);
        assert!(
            matches!(&input, Input::Document(path) if path == &PathBuf::from("in.json")),
            "{input:?}"
        );
    }

    /// A generated command's flags are its input's scalar fields: given, they make the
    /// input object (integers as numbers, booleans only when set); with `--input` they are
    /// refused; without either the input is read as by default.
    #[test]
    fn flags_make_the_input_object() {
        let derived = crate::Cli::command();
        let parse = |args: &[&str]| {
            let mut all = vec!["agent-memory", "review", "approve"];
            all.extend(args);
            augment(crate::Cli::command()).try_get_matches_from(all)
        };
        let matches = parse(&["--path", "/memories/a.md", "--version", "3"]).expect("parsed");
        let (op, input) = matched(&derived, &matches).expect("matched");
        assert_eq!(op.name, "memory_approve");
        let Input::Flags(value) = input else {
            panic!("flags make the input: {input:?}");
        };
        assert_eq!(
            value,
            serde_json::json!({"path": "/memories/a.md", "version": 3})
        );
        assert!(parse(&["--version", "three"]).is_err(), "an integer flag");
        assert!(
            parse(&["--path", "/memories/a.md", "--input", "x.json"]).is_err(),
            "flags and --input together"
        );
        let matches = parse(&[]).expect("parsed");
        let (_, input) = matched(&derived, &matches).expect("matched");
        assert!(matches!(input, Input::Default), "{input:?}");
    }

    /// An object of strings (a fingerprint) is one `--NAME KEY=VALUE` flag per pair.
    #[test]
    fn pairs_flags_make_an_object() {
        let derived = crate::Cli::command();
        let parse = |args: &[&str]| {
            let mut all = vec![
                "agent-memory",
                "review",
                "approve-pattern",
                "--partition",
                "p",
            ];
            all.extend(args);
            augment(crate::Cli::command()).try_get_matches_from(all)
        };
        let matches =
            parse(&["--fingerprint", "task=deploy", "--fingerprint", "env=a=b"]).expect("parsed");
        let (op, input) = matched(&derived, &matches).expect("matched");
        assert_eq!(op.name, "trajectory_approve_pattern");
        let Input::Flags(value) = input else {
            panic!("flags make the input: {input:?}");
        };
        assert_eq!(
            value,
            serde_json::json!({"partition": "p", "fingerprint": {"task": "deploy", "env": "a=b"}})
        );
        let refused = parse(&["--fingerprint", "deploy"]).expect_err("not a pair");
        assert!(
            refused.to_string().contains("expected KEY=VALUE"),
            "{refused}"
        );
    }
}
