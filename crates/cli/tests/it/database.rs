//! The database file under attack, through the command line: another application's SQLite
//! file is refused by every command and left byte for byte as it was; a reader answers at
//! once while another process holds a write transaction; a database on read-only media is
//! read, and a write to it fails naming it.

use std::fs;
use std::path::Path;
use std::sync::Mutex;

use agent_memory_core::store::trajectory::{
    CrystallizeOutput, Fingerprint, NewEpisode, PatternStore,
};
use agent_memory_core::{EpisodeStore, Partition, Timestamp};
use agent_memory_sqlite::SqliteStore;

use crate::{Run, Sandbox};

/// The commands that open the database, each of which must refuse a foreign file.
const COMMANDS: &[&[&str]] = &[
    &["stats"],
    &["check"],
    &["browser", "runs"],
    &["turns", "show", "s"],
    &["recording", "templatize", "--session", "s"],
    &["trajectory", "crystallize", "--partition", "p"],
    &["recording", "import", "sign-in.logs.jsonl"],
];

/// A database whose header says it is not ours: the user version and application id cleared
/// on a file that holds tables, as another program's file with its own tables looks.
fn foreign(sandbox: &Sandbox) -> Vec<u8> {
    let path = sandbox.path().join("other.db");
    drop(SqliteStore::open(&path).expect("create"));
    let mut bytes = fs::read(&path).expect("read");
    bytes[60..64].copy_from_slice(&[0, 0, 0, 0]);
    bytes[68..72].copy_from_slice(&[0, 0, 0, 0]);
    fs::write(&path, &bytes).expect("write");
    bytes
}

#[test]
fn another_applications_database_is_refused_by_every_command_and_left_as_it_was() {
    let sandbox = Sandbox::new();
    sandbox.fixture("sign-in.logs.jsonl");
    let before = foreign(&sandbox);
    for command in COMMANDS {
        let mut args = vec!["--db", "other.db"];
        args.extend_from_slice(command);
        let run = sandbox.run(&args, &[]);
        assert_eq!(run.code, Some(1), "{command:?}: {run}");
        assert!(
            run.stderr.starts_with(
                "error: other.db is not an agent-memory database: it holds its own tables ("
            ),
            "{command:?}: {run}"
        );
        assert_eq!(
            fs::read(sandbox.path().join("other.db")).expect("read"),
            before,
            "{command:?} changed the file"
        );
    }
    let mut files: Vec<String> = fs::read_dir(sandbox.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["other.db", "sign-in.logs.jsonl"]);
}

/// Another process holds a write transaction (a crystallize whose step is still running):
/// `stats` and `check` answer meanwhile, instead of waiting 30 s for "database is locked".
#[test]
fn readers_answer_while_another_process_holds_a_write_transaction() {
    let sandbox = Sandbox::new();
    let path = sandbox.path().join("memory.db");
    let store = SqliteStore::open(&path).expect("open");
    let partition = Partition::new("p").expect("partition");
    store
        .append_episodes(&[NewEpisode {
            partition: partition.clone(),
            fingerprint: Fingerprint::new([("task", "t")]).expect("fingerprint"),
            trajectory: vec!["a".to_owned()],
            outcome: "{}".to_owned(),
            recorded_at: Timestamp::from_millis(1),
            provenance: None,
        }])
        .expect("episode");
    let runs: Mutex<Vec<(&str, Run)>> = Mutex::new(Vec::new());
    // The step runs inside the store's write transaction: the lock is held while it runs.
    store
        .crystallize_with(&partition, &|_| {
            let mut runs = runs.lock().expect("lock");
            for command in ["stats", "check"] {
                runs.push((command, sandbox.run(&["--db", "memory.db", command], &[])));
            }
            Ok(CrystallizeOutput::default())
        })
        .expect("crystallize");
    let runs = runs.into_inner().expect("runs");
    assert_eq!(runs.len(), 2);
    for (command, run) in runs {
        assert_eq!(run.code, Some(0), "{command}: {run}");
    }
}

/// Makes `path` (a file or a folder) unwritable for everyone: permission bits, and where they
/// do not bind (as root) the immutable attribute.
#[cfg(unix)]
fn make_unwritable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mode = if path.is_dir() { 0o555 } else { 0o444 };
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
    let writable = || {
        if path.is_dir() {
            let probe = path.join(".probe");
            let created = fs::File::create(&probe).is_ok();
            let _ = fs::remove_file(&probe);
            created
        } else {
            fs::OpenOptions::new().append(true).open(path).is_ok()
        }
    };
    if writable() {
        let status = std::process::Command::new("chattr")
            .arg("+i")
            .arg(path)
            .status()
            .expect("run chattr");
        assert!(
            status.success() && !writable(),
            "cannot make {} read-only here",
            path.display()
        );
    }
}

#[cfg(unix)]
fn make_writable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::process::Command::new("chattr")
        .arg("-i")
        .arg(path)
        .status();
    let mode = if path.is_dir() { 0o755 } else { 0o644 };
    let _ = fs::set_permissions(path, fs::Permissions::from_mode(mode));
}

/// Read-only media: a read-only file in a read-only folder, where SQLite cannot create the
/// files a WAL database needs beside it. Reading commands answer; an import fails naming the
/// file; nothing on the media changes.
#[cfg(unix)]
#[test]
fn a_database_on_read_only_media_is_read() {
    let sandbox = Sandbox::new();
    sandbox.fixture("verbose-flag.session.jsonl");
    sandbox.fixture("sign-in.logs.jsonl");
    let media = sandbox.path().join("media");
    fs::create_dir(&media).expect("mkdir");
    sandbox.expect(
        0,
        &[
            "--db",
            "media/memory.db",
            "turns",
            "import",
            "verbose-flag.session.jsonl",
        ],
    );
    let db = media.join("memory.db");
    let before = fs::read(&db).expect("read");
    make_unwritable(&db);
    make_unwritable(&media);
    let reads: Vec<Run> = [
        &["stats"][..],
        &["check"],
        &["turns", "show", "verbose-flag"],
    ]
    .iter()
    .map(|command| {
        let mut args = vec!["--db", "media/memory.db"];
        args.extend_from_slice(command);
        sandbox.run(&args, &[])
    })
    .collect();
    let write = sandbox.run(
        &[
            "--db",
            "media/memory.db",
            "recording",
            "import",
            "sign-in.logs.jsonl",
        ],
        &[],
    );
    let files: Vec<_> = fs::read_dir(&media)
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    make_writable(&media);
    make_writable(&db);
    for run in &reads {
        assert_eq!(run.code, Some(0), "{run}");
    }
    assert!(
        reads[2].stdout.contains("Add a --verbose flag"),
        "{}",
        reads[2]
    );
    assert_eq!(write.code, Some(1), "{write}");
    assert!(
        write
            .stderr
            .contains("[TMP]/media/memory.db is read-only here")
            || write.stderr.contains("media/memory.db is read-only here"),
        "{write}"
    );
    assert_eq!(fs::read(&db).expect("read"), before, "the file changed");
    assert_eq!(files, vec![std::ffi::OsString::from("memory.db")]);
}
