//! `agent-memory notes`: the notes memory, a `/memories` tree of text files per scope, with
//! the commands of Anthropic's memory tool (`view`, `create`, `str-replace`, `insert`,
//! `delete`, `rename`) and `search`. Each runs the contract's `notes` operation and prints
//! the text the tool answers with (with `--json`, the operation's output).

use std::path::PathBuf;

use anyhow::Result;

use crate::ops::notes::{NotesCommand, NotesInput};
use crate::output::print_json;
use crate::{GlobalArgs, ops};

/// `notes` and its subcommand.
#[derive(Debug, clap::Args)]
pub(crate) struct NotesArgs {
    /// Whose notes: each scope is a `/memories` tree of its own.
    #[arg(long, global = true, value_name = "NAME", default_value = ops::notes::DEFAULT_SCOPE)]
    scope: String,
    /// Who writes: user, tool:NAME, page:URL, model[:NAME] or import:FORMAT (model when
    /// absent); kept with each version the command writes.
    #[arg(long, global = true, value_name = "SOURCE")]
    source: Option<String>,
    /// The session or run the write belongs to, kept with its version.
    #[arg(long, global = true, value_name = "ID")]
    session: Option<String>,
    /// Show a viewed file inside a <memory-item source=… trust=…> data block.
    #[arg(long, global = true)]
    as_data: bool,
    #[command(subcommand)]
    command: NotesSub,
}

/// A text given inline or read from a file (`-`: standard input).
#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
struct TextSource {
    /// The text.
    #[arg(long, value_name = "TEXT")]
    text: Option<String>,
    /// A file holding the text (`-`: standard input).
    #[arg(long = "text-file", value_name = "FILE")]
    text_file: Option<PathBuf>,
}

impl TextSource {
    fn read(&self) -> Result<String> {
        match (&self.text, &self.text_file) {
            (Some(text), _) => Ok(text.clone()),
            (None, Some(file)) => Ok(crate::input::read_text(file)?.1),
            (None, None) => Ok(String::new()),
        }
    }
}

#[derive(Debug, clap::Subcommand)]
enum NotesSub {
    /// Show a directory (two levels deep, with sizes) or a file with line numbers.
    View {
        /// A path under /memories.
        #[arg(default_value = ops::notes::ROOT)]
        path: String,
        /// Only these lines of a file, 1-based (LAST -1: to the end).
        #[arg(long, num_args = 2, value_names = ["FIRST", "LAST"], allow_negative_numbers = true)]
        range: Option<Vec<i64>>,
    },
    /// Create a file; fails when one is there.
    Create {
        /// The new file, under /memories.
        path: String,
        #[command(flatten)]
        text: TextSource,
    },
    /// Replace the one occurrence of a text in a file.
    StrReplace {
        /// The file.
        path: String,
        /// The text to replace; it must occur exactly once.
        #[arg(long, value_name = "TEXT")]
        old: String,
        /// Its replacement.
        #[arg(long, value_name = "TEXT")]
        new: String,
    },
    /// Insert a line after line N of a file (0: at the top).
    Insert {
        /// The file.
        path: String,
        /// The line after which the text goes.
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        line: i64,
        #[command(flatten)]
        text: TextSource,
    },
    /// Delete a file, or a directory with everything in it.
    Delete {
        /// The file or directory.
        path: String,
    },
    /// Rename or move a file or a directory.
    Rename {
        /// Where it is.
        old_path: String,
        /// Where it goes; nothing may be there.
        new_path: String,
    },
    /// Find the files holding every word of a query, with their matching lines.
    Search {
        /// Words; ASCII case is ignored.
        query: String,
        /// The directory to search.
        #[arg(long, value_name = "DIR")]
        path: Option<String>,
        /// The most files to show.
        #[arg(long, value_name = "N", default_value_t = ops::notes::DEFAULT_SEARCH_LIMIT)]
        limit: usize,
    },
}

pub(crate) fn run(args: &NotesArgs, global: &GlobalArgs) -> Result<()> {
    let command = match &args.command {
        NotesSub::View { path, range } => NotesCommand::View {
            path: path.clone(),
            view_range: range
                .as_deref()
                .and_then(|r| Some([*r.first()?, *r.get(1)?])),
        },
        NotesSub::Create { path, text } => NotesCommand::Create {
            path: path.clone(),
            file_text: text.read()?,
        },
        NotesSub::StrReplace { path, old, new } => NotesCommand::StrReplace {
            path: path.clone(),
            old_str: old.clone(),
            new_str: new.clone(),
        },
        NotesSub::Insert { path, line, text } => NotesCommand::Insert {
            path: path.clone(),
            insert_line: *line,
            insert_text: text.read()?,
        },
        NotesSub::Delete { path } => NotesCommand::Delete { path: path.clone() },
        NotesSub::Rename { old_path, new_path } => NotesCommand::Rename {
            old_path: old_path.clone(),
            new_path: new_path.clone(),
        },
        NotesSub::Search { query, path, limit } => NotesCommand::Search {
            query: query.clone(),
            path: path.clone(),
            limit: Some(*limit),
        },
    };
    // Reading never creates a database; only a write does, as every other command.
    let store = if command.reads_only() {
        global.open_for_reading()?
    } else {
        global.open()?
    };
    let input = NotesInput {
        command,
        scope: Some(args.scope.clone()),
        secrets: None,
        sdk: None,
        max_note_bytes: None,
        source: args.source.clone(),
        session: args.session.clone(),
        as_data: args.as_data,
    };
    let output = ops::notes::notes(&global.env(&store), input)?;
    if global.json {
        return print_json(&output);
    }
    println!("{}", output.text);
    Ok(())
}
