//! The command of every operation of the contract's table that no module of `commands/` spells
//! out with flags of its own: `agent-memory <words> [--input PATH]`, at the words the table
//! gives it (`recording next-call`), its JSON input read from a file or standard input (`-`,
//! the default), its output printed as JSON. So every operation has a command, and a new
//! operation has one without an edit here.

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
                let made = Command::new(*group).subcommand_required(true);
                parent.subcommand(insert(made, rest, leaf))
            }
        }
    }
}

/// The command of `op`.
fn leaf(op: &'static Operation) -> Command {
    let name = words(op).last().copied().unwrap_or(op.name);
    let command = Command::new(name).about(op.description);
    if !op.takes_input() {
        return command;
    }
    command.arg(
        Arg::new(INPUT)
            .long(INPUT)
            .value_name("PATH")
            .value_parser(clap::value_parser!(PathBuf))
            .default_value("-")
            .help(format!(
                "The operation's JSON input (schemas/{}.input.json): a file, or - for standard input",
                op.name
            )),
    )
}

/// The generated command `matches` chose below the derived tree `root`, with its input, if
/// it chose one.
pub(crate) fn matched(
    root: &Command,
    matches: &ArgMatches,
) -> Option<(&'static Operation, Option<PathBuf>)> {
    let mut chosen = Vec::new();
    let mut at = matches;
    while let Some((name, sub)) = at.subcommand() {
        chosen.push(name);
        at = sub;
    }
    let op = unspelled(root).find(|op| words(op) == chosen)?;
    let input = at.try_get_one::<PathBuf>(INPUT).ok().flatten().cloned();
    Some((op, input))
}

/// Runs `op` on the JSON document at `input` and prints its output as JSON.
pub(crate) fn run(op: &Operation, input: Option<PathBuf>, global: &GlobalArgs) -> Result<()> {
    let value: Value = match &input {
        Some(path) => crate::input::document(path)?,
        None => Value::Null,
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
        assert_eq!(input, Some(PathBuf::from("in.json")));
    }
}
