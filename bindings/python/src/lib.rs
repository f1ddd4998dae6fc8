//! The native part of the Python package `agent_memory` (module `agent_memory._native`): a
//! door onto the JSON contract that converts values and maps errors, nothing more.
//!
//! `NativeStore` opens a store with the contract's `database::open` and runs any operation of
//! `operations::all()` by name, with Python values in and out (dicts, lists, str, int, float,
//! bool, None, converted to and from JSON here); the Python package gives each operation a
//! method of its own, generated from the same table by `cargo xtask codegen` (`operations()`
//! lists the table for its tests). The popoto drop-in's two hot calls skip the JSON document:
//! `call_patterns` makes its `Pattern` objects from the trajectory operations' typed output,
//! and `record_episodes` turns the record input it sends straight into the operation's input
//! (any other input takes the JSON path, so errors stay the contract's). Every call into the
//! store releases the GIL, so other Python threads run meanwhile, and runs under
//! `catch_unwind`, so a panic becomes an `agent_memory.Error` instead of reaching Python. A
//! contract error becomes the exception class of its kind (`agent_memory.errors`), with `kind`,
//! `message` and `input`.
//! `exit_status` is the whole `agent-memory` command line, in-process.

use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Mutex;

use agent_memory_contract::database::{self, Database};
use agent_memory_contract::operations::{self, Effect, Operation, arguments};
use agent_memory_contract::trajectory::{CrystallizeHooks, PatternEntry, RecordInput};
use agent_memory_contract::{Env, Error as ContractError, ErrorKind};
use agent_memory_core::store::trajectory::Episode;
use agent_memory_core::{Clock, ManualClock, RandomIds, SystemClock, Timestamp};
use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PyString, PyTuple, PyType};
use serde_json::{Map, Number, Value};

/// How deep a Python value may nest before it is refused (a JSON document nested deeper is
/// no input any operation takes, and the limit keeps conversion off the end of the stack).
const MAX_DEPTH: usize = 128;

/// Every operation of the contract, built once (the contract's own table).
fn operations() -> &'static [Operation] {
    operations::table()
}

/// An error as the contract describes it, before it becomes a Python exception: the
/// contract's own error, raised as the exception class of its kind (one conversion, in
/// [`raise`]).
type Failure = ContractError;

/// The failure of a panic inside `what`.
fn panicked(what: &str) -> Failure {
    Failure::new(ErrorKind::Other, format!("internal error: {what} panicked"))
}

/// The exception of `failure`'s kind, made by `agent_memory.errors.from_contract`.
fn raise(py: Python<'_>, failure: Failure) -> PyErr {
    let raised = py
        .import("agent_memory.errors")
        .and_then(|errors| errors.getattr("from_contract"))
        .and_then(|make| make.call1((failure.kind().as_str(), failure.message(), failure.input())));
    match raised {
        Ok(exception) => PyErr::from_value(exception),
        Err(error) => error,
    }
}

/// Runs `work` without the GIL, turning a panic into a [`Failure`] about `what`.
fn detached<T: Send>(
    py: Python<'_>,
    what: &str,
    work: impl FnOnce() -> Result<T, Failure> + Send,
) -> PyResult<T> {
    let outcome = py.detach(|| catch_unwind(AssertUnwindSafe(work)));
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(failure)) => Err(raise(py, failure)),
        Err(_) => Err(raise(py, panicked(what))),
    }
}

/// An open memory store: a SQLite file, a private SQLite database in memory, or a
/// PostgreSQL database. One store is shared by every thread that holds it.
#[pyclass(frozen, module = "agent_memory._native", name = "Store")]
struct NativeStore {
    /// Created by the first write; a read before it answers as on an empty database.
    database: Database,
    location: String,
}

#[pymethods]
impl NativeStore {
    /// The store at `path_or_url`: an existing database is opened at once; a SQLite file
    /// that does not exist yet is created by the first write, and a read before it answers
    /// as on an empty database.
    #[new]
    fn new(py: Python<'_>, path_or_url: &Bound<'_, PyAny>) -> PyResult<Self> {
        let path = path_argument(path_or_url)?;
        let location = database::describe(&path);
        let shown = location.clone();
        let database = detached(py, "opening the store", move || {
            Database::new(&path, &agent_memory_core::SharedClock::default()).map_err(|failure| {
                match failure.input() {
                    Some(_) => failure,
                    None => failure.about(shown),
                }
            })
        })?;
        Ok(NativeStore { database, location })
    }

    /// Runs the operation `operation` on `input` (a dict, or None for an operation without
    /// input) and returns its output; `now_ms` fixes "now" (milliseconds since the epoch).
    #[pyo3(signature = (operation, input=None, now_ms=None))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        operation: &str,
        input: Option<&Bound<'py, PyAny>>,
        now_ms: Option<i64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let output = self.run(py, operation, input, now_ms)?;
        to_python(py, &output)
    }

    /// `trajectory_record` of `input` (a dict, as [`call`](Self::call) takes it) for its
    /// effect only: returns None. An input of the shape the popoto drop-in sends (str
    /// partition, fields and fingerprint values, a list of str steps, integer settings and
    /// times) becomes the operation's input directly, without a JSON document; any other
    /// goes through [`call`](Self::call)'s path, so it fails as it would there.
    #[pyo3(signature = (input, now_ms=None))]
    fn record_episodes(
        &self,
        py: Python<'_>,
        input: &Bound<'_, PyAny>,
        now_ms: Option<i64>,
    ) -> PyResult<()> {
        let operation = "trajectory_record";
        let Some(typed) = record_input(input)? else {
            return self.run(py, operation, Some(input), now_ms).map(drop);
        };
        self.in_env(py, operation, Effect::Writes, now_ms, move |env| {
            agent_memory_contract::trajectory::record(env, typed).map(drop)
        })
    }

    /// The popoto drop-in's `record_episodes`: `header` is `trajectory_record`'s input with
    /// no episodes (`"episodes": []`), and `episodes` a list of `(fingerprint, trajectory,
    /// outcome)` tuples as popoto's `record_episode` takes its arguments, each recorded at
    /// `recorded_at` (milliseconds since the epoch). The tuples are read straight into the
    /// operation's input, with no dict made per episode. Answers False, having read nothing
    /// but the input and written nothing, when anything is not of the plain shape (a str
    /// partition, a dict of str by str fingerprint, a list of str steps): the caller then
    /// makes the contract's input and calls [`record_episodes`](Self::record_episodes), so a
    /// misfit fails as it does there.
    #[pyo3(signature = (header, episodes, recorded_at, now_ms=None))]
    fn record_episode_tuples(
        &self,
        py: Python<'_>,
        header: &Bound<'_, PyAny>,
        episodes: &Bound<'_, PyAny>,
        recorded_at: i64,
        now_ms: Option<i64>,
    ) -> PyResult<bool> {
        let Some(mut typed) = record_input(header)? else {
            return Ok(false);
        };
        let Ok(episodes) = episodes.cast::<PyList>() else {
            return Ok(false);
        };
        if !typed.episodes.is_empty() {
            return Ok(false);
        }
        typed.episodes.reserve_exact(episodes.len());
        for episode in episodes.iter() {
            let Some(episode) = episode_tuple(&episode, recorded_at) else {
                return Ok(false);
            };
            typed.episodes.push(episode);
        }
        self.in_env(
            py,
            "trajectory_record",
            Effect::Writes,
            now_ms,
            move |env| agent_memory_contract::trajectory::record(env, typed).map(drop),
        )?;
        Ok(true)
    }

    /// [`call`](Self::call) of an operation whose output lists patterns
    /// (`trajectory_recall`, `trajectory_crystallize`, `trajectory_patterns`), returning only
    /// those patterns, each as an instance of `pattern` (the popoto drop-in's class) whose
    /// `__dict__` holds `partition` (the object given) and `_native`, the entry as a
    /// [`PatternData`], whose `attributes()` the class fills its other attributes from when
    /// one is first read: `fingerprint`, each fingerprint field, `canonical_sequence`,
    /// `confidence`, `_last_reinforced` (the RFC 3339 text), `evidence_count`,
    /// `corroborations`, `contradictions` and, in a recall, `score`, as the class's
    /// `__init__` sets them. A pattern with a fingerprint field named in `reserved` (the
    /// class's data descriptors, which an assignment goes through) is made by calling
    /// `pattern(partition, entry)` instead. The operation's typed output becomes the objects
    /// directly, without the JSON document [`call`](Self::call) would build: a recall's
    /// patterns are most of what it costs through Python. A recall's input of the shape the
    /// drop-in sends is read into the operation's input type directly too; any other input
    /// takes `call`'s path, so it fails as it would there.
    // The Python signature: `call`'s three arguments and the three the patterns are made from.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (operation, input, now_ms, pattern, partition, reserved))]
    fn call_patterns<'py>(
        &self,
        py: Python<'py>,
        operation: &str,
        input: &Bound<'py, PyAny>,
        now_ms: Option<i64>,
        pattern: &Bound<'py, PyType>,
        partition: &Bound<'py, PyAny>,
        reserved: &Bound<'py, PyFrozenSet>,
    ) -> PyResult<Bound<'py, PyList>> {
        use agent_memory_contract::trajectory;
        // A recall's input of the drop-in's shape is read without a JSON document between.
        let typed = match operation {
            "trajectory_recall" => recall_input(input),
            _ => None,
        };
        let entries = if let Some(typed) = typed {
            self.in_env(py, operation, Effect::Reads, now_ms, move |env| {
                trajectory::recall(env, typed).map(|output| output.patterns)
            })?
        } else {
            self.listed_patterns(py, operation, input, now_ms)?
        };
        let maker = PatternMaker::new(pattern, partition, reserved)?;
        let made = PyList::empty(py);
        for entry in entries {
            made.append(maker.make(entry)?)?;
        }
        Ok(made)
    }

    /// `trajectory_crystallize` of `partition` with popoto's extension points overridden in
    /// Python: `signals(episodes)`, when given, returns the signal of each of the run's new
    /// episodes; `canonical(groups)`, when given, returns the canonical sequence (or None)
    /// of each pattern the run created or reinforced, each group given as its fingerprint
    /// and every episode of it. Episodes are dicts (`seq`, `fingerprint`, `trajectory`,
    /// `outcome`, `recorded_at` in milliseconds). The callbacks run inside the crystallize
    /// transaction, with the GIL; an exception they raise fails the call with nothing
    /// written and is raised again here.
    #[pyo3(signature = (partition, signals=None, canonical=None, now_ms=None))]
    fn trajectory_crystallize_hooked<'py>(
        &self,
        py: Python<'py>,
        partition: String,
        signals: Option<Py<PyAny>>,
        canonical: Option<Py<PyAny>>,
        now_ms: Option<i64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let database = &self.database;
        let raised: Mutex<Option<PyErr>> = Mutex::new(None);
        let hooks = PythonHooks {
            signals,
            canonical,
            earlier: Vec::new(),
            raised: &raised,
        };
        let output = detached(py, "trajectory_crystallize", move || {
            let store = database.store(Effect::Writes)?;
            let mut hooks = hooks;
            // popoto hands `_canonical_sequence` every episode of a group: the ones already
            // crystallized are read before the run, the run's new ones come with its step.
            // A partition name the store refuses is reported by the crystallize below.
            if hooks.canonical.is_some()
                && let Ok(name) = agent_memory_core::Partition::new(partition.as_str())
            {
                hooks.earlier = store
                    .episodes_after(&name, 0, usize::MAX)
                    .map_err(Failure::from)?;
            }
            let env = Env {
                client: Some("python".to_owned()),
                store,
                clock: clock(now_ms),
                ids: Box::new(RandomIds::new()),
                files: agent_memory_contract::files::FileAccess::Any,
            };
            let input = agent_memory_contract::trajectory::CrystallizeInput {
                partition,
                given: Default::default(),
            };
            agent_memory_contract::trajectory::crystallize_with_hooks(&env, &input, Some(&hooks))
                .and_then(|output| {
                    serde_json::to_value(output).map_err(|error| {
                        Failure::new(ErrorKind::Other, format!("encoding the result: {error}"))
                    })
                })
        });
        if let Some(error) = raised.lock().ok().and_then(|mut r| r.take()) {
            return Err(error);
        }
        to_python(py, &output?)
    }

    /// The database: a file's path, `:memory:`, or a URL without its password.
    #[getter]
    fn location(&self) -> &str {
        &self.location
    }

    fn __repr__(&self) -> String {
        format!("Store({:?})", self.location)
    }
}

impl NativeStore {
    /// The patterns `operation` (an operation [`call_patterns`](Self::call_patterns) takes) lists for
    /// `input`, read through a JSON document as [`call`](Self::call) reads it.
    fn listed_patterns(
        &self,
        py: Python<'_>,
        operation: &str,
        input: &Bound<'_, PyAny>,
        now_ms: Option<i64>,
    ) -> PyResult<Vec<PatternEntry>> {
        use agent_memory_contract::trajectory;
        let json = input_json(operation, Some(input))?;
        self.in_env(
            py,
            operation,
            effect_of(operation),
            now_ms,
            move |env| match operation {
                "trajectory_recall" => arguments(operation, json)
                    .map(|input| trajectory::recall(env, input).map(|o| o.patterns))?,
                "trajectory_crystallize" => arguments(operation, json)
                    .map(|input| trajectory::crystallize(env, input).map(|o| o.patterns))?,
                "trajectory_patterns" => arguments(operation, json)
                    .map(|input| trajectory::patterns(env, input).map(|o| o.patterns))?,
                _ => Err(Failure::invalid(
                    operation.to_owned(),
                    format!("operation {operation:?} lists no patterns"),
                )),
            },
        )
    }

    /// Runs the operation `operation` on `input` and returns its output as JSON.
    fn run(
        &self,
        py: Python<'_>,
        operation: &str,
        input: Option<&Bound<'_, PyAny>>,
        now_ms: Option<i64>,
    ) -> PyResult<Value> {
        let Some(op) = operations().iter().find(|op| op.name == operation) else {
            return Err(raise(
                py,
                Failure::invalid(
                    operation.to_owned(),
                    format!("there is no operation {operation:?}"),
                ),
            ));
        };
        let input = input_json(operation, input)?;
        let effect = op.effect_on(&input);
        self.in_env(py, operation, effect, now_ms, move |env| {
            op.call(env, input)
        })
    }

    /// Runs `work` on this store, "now" fixed by `now_ms`, without the GIL (see
    /// [`detached`]); a database failure that names no input names the store's location.
    /// `effect` is what the work does: a read before the database exists answers from an
    /// empty memory, and only a write creates it.
    fn in_env<T: Send>(
        &self,
        py: Python<'_>,
        operation: &str,
        effect: Effect,
        now_ms: Option<i64>,
        work: impl FnOnce(&Env<'_>) -> Result<T, Failure> + Send,
    ) -> PyResult<T> {
        let database = &self.database;
        let location = &self.location;
        detached(py, operation, move || {
            let store = match database.opened() {
                Some(store) => store,
                // Until the database exists, a read answers from an empty memory.
                None => database.store(effect)?,
            };
            let env = Env {
                client: Some("python".to_owned()),
                store,
                clock: clock(now_ms),
                ids: Box::new(RandomIds::new()),
                // A program in the same process names its own files, as on the command line.
                files: agent_memory_contract::files::FileAccess::Any,
            };
            work(&env).map_err(|failure| {
                if failure.kind() == ErrorKind::Database && failure.input().is_none() {
                    return failure.about(location.clone());
                }
                failure
            })
        })
    }
}

/// What operation `name` does to the memory; an unknown name counts as a write, so it finds
/// the database opened and fails as the contract says.
fn effect_of(name: &str) -> Effect {
    operations()
        .iter()
        .find(|op| op.name == name)
        .map_or(Effect::Writes, |op| op.effect)
}

/// An operation's input as JSON: a dict, or None (or nothing) for an operation without
/// input; any other value is a `TypeError` naming `operation`.
fn input_json(operation: &str, input: Option<&Bound<'_, PyAny>>) -> PyResult<Value> {
    match input {
        None => Ok(Value::Null),
        Some(value) if value.is_none() => Ok(Value::Null),
        Some(value) if value.is_instance_of::<PyDict>() => {
            to_json(value, &mut "input".to_owned(), 0)
        }
        Some(value) => Err(PyTypeError::new_err(format!(
            "{operation}: input must be a dict, not {}",
            type_name(value)
        ))),
    }
}

/// `input` as `trajectory_record`'s input when every value has exactly the type the input
/// takes (see [`NativeStore::record_episodes`]); `None` for anything else, which the JSON path
/// then reports as the contract does. An outcome that is no JSON is an error here, as there.
fn record_input(input: &Bound<'_, PyAny>) -> PyResult<Option<RecordInput>> {
    use agent_memory_contract::trajectory::{EpisodeInput, ExtraFields, TimeInput};
    let Ok(input) = input.cast::<PyDict>() else {
        return Ok(None);
    };
    let mut record = RecordInput {
        partition: String::new(),
        fields: None,
        cluster_threshold: None,
        evidence_cap: None,
        initial_confidence: None,
        extra_fields: Default::default(),
        episodes: Vec::new(),
        source: None,
        session: None,
    };
    let mut has_partition = false;
    let mut has_episodes = false;
    for (key, value) in input.iter() {
        let Some(key) = plain_str(&key) else {
            return Ok(None);
        };
        let fits = match key.as_str() {
            "partition" => {
                plain_str(&value).map(|p| record.partition = p).is_some() && {
                    has_partition = true;
                    true
                }
            }
            "fields" => str_list(&value).map(|f| record.fields = Some(f)).is_some(),
            "source" => plain_str(&value).map(|s| record.source = Some(s)).is_some(),
            "session" => plain_str(&value)
                .map(|s| record.session = Some(s))
                .is_some(),
            "cluster_threshold" => plain_u64(&value)
                .map(|n| record.cluster_threshold = Some(n))
                .is_some(),
            "evidence_cap" => plain_u64(&value)
                .map(|n| record.evidence_cap = Some(n))
                .is_some(),
            "extra_fields" => match plain_str(&value).as_deref() {
                Some("refuse") => true,
                Some("ignore") => {
                    record.extra_fields = ExtraFields::Ignore;
                    true
                }
                _ => false,
            },
            "initial_confidence" => match value.cast::<PyFloat>() {
                Ok(x) if value.is_exact_instance_of::<PyFloat>() && x.value().is_finite() => {
                    record.initial_confidence = Some(x.value());
                    true
                }
                _ => false,
            },
            "episodes" => {
                has_episodes = true;
                let Ok(episodes) = value.cast::<PyList>() else {
                    return Ok(None);
                };
                for (i, episode) in episodes.iter().enumerate() {
                    let Ok(episode) = episode.cast::<PyDict>() else {
                        return Ok(None);
                    };
                    let (mut fingerprint, mut trajectory, mut outcome, mut at) =
                        (None, None, None, None);
                    for (key, value) in episode.iter() {
                        match plain_str(&key).as_deref() {
                            Some("fingerprint") => fingerprint = str_map(&value),
                            Some("trajectory") => trajectory = str_list(&value),
                            Some("outcome") => {
                                outcome = Some(outcome_value(&value, || {
                                    format!("input.episodes[{i}].outcome")
                                })?);
                            }
                            Some("recorded_at") if value.is_exact_instance_of::<PyInt>() => {
                                at = value.extract::<i64>().ok().map(TimeInput::Millis);
                            }
                            _ => return Ok(None),
                        }
                    }
                    let (Some(fingerprint), Some(trajectory), Some(outcome), Some(at)) =
                        (fingerprint, trajectory, outcome, at)
                    else {
                        return Ok(None);
                    };
                    record.episodes.push(EpisodeInput {
                        fingerprint,
                        trajectory,
                        outcome,
                        recorded_at: Some(at),
                    });
                }
                true
            }
            _ => false,
        };
        if !fits {
            return Ok(None);
        }
    }
    Ok((has_partition && has_episodes).then_some(record))
}

/// One `(fingerprint, trajectory, outcome)` tuple of the popoto drop-in's batch as the
/// contract's episode recorded at `recorded_at`, when it has the plain shape (see
/// [`NativeStore::record_episode_tuples`]), else None.
fn episode_tuple(
    item: &Bound<'_, PyAny>,
    recorded_at: i64,
) -> Option<agent_memory_contract::trajectory::EpisodeInput> {
    use agent_memory_contract::trajectory::{EpisodeInput, TimeInput};
    let tuple = item.cast::<PyTuple>().ok()?;
    if tuple.len() != 3 {
        return None;
    }
    let fingerprint = str_map(&tuple.get_item(0).ok()?)?;
    let trajectory = str_list(&tuple.get_item(1).ok()?)?;
    // A value that does not convert fails on the caller's path, which names it.
    let outcome = outcome_value(&tuple.get_item(2).ok()?, String::new).ok()?;
    Some(EpisodeInput {
        fingerprint,
        trajectory,
        outcome,
        recorded_at: Some(TimeInput::Millis(recorded_at)),
    })
}

/// An episode's outcome as JSON: mostly a str, whose JSON is that text, so only another
/// value needs `path`, the place `to_json` names in an error.
fn outcome_value(value: &Bound<'_, PyAny>, path: impl FnOnce() -> String) -> PyResult<Value> {
    match plain_str(value) {
        Some(text) => Ok(Value::String(text)),
        None => to_json(value, &mut path(), 0),
    }
}

/// `input` as `trajectory_recall`'s input when it has the shape the popoto drop-in sends (str
/// partition and fingerprint values, an int limit, float weights), else None: the caller then
/// takes the JSON path, so any other input fails exactly as it would there.
fn recall_input(
    input: &Bound<'_, PyAny>,
) -> Option<agent_memory_contract::trajectory::RecallInput> {
    let input = input.cast::<PyDict>().ok()?;
    let mut recall = agent_memory_contract::trajectory::RecallInput {
        partition: String::new(),
        fingerprint: Default::default(),
        limit: None,
        confidence_weight: None,
        recency_weight: None,
        given: Default::default(),
    };
    let (mut has_partition, mut has_fingerprint) = (false, false);
    let weight = |value: &Bound<'_, PyAny>| {
        let x = value.cast::<PyFloat>().ok()?.value();
        (value.is_exact_instance_of::<PyFloat>() && x.is_finite()).then_some(x)
    };
    for (key, value) in input.iter() {
        match plain_str(&key)?.as_str() {
            "partition" => {
                recall.partition = plain_str(&value)?;
                has_partition = true;
            }
            "fingerprint" => {
                recall.fingerprint = str_map(&value)?;
                has_fingerprint = true;
            }
            "limit" => recall.limit = Some(usize::try_from(plain_u64(&value)?).ok()?),
            "confidence_weight" => recall.confidence_weight = Some(weight(&value)?),
            "recency_weight" => recall.recency_weight = Some(weight(&value)?),
            _ => return None,
        }
    }
    (has_partition && has_fingerprint).then_some(recall)
}

/// `value` when it is exactly a `str` that is valid Unicode.
fn plain_str(value: &Bound<'_, PyAny>) -> Option<String> {
    if !value.is_exact_instance_of::<PyString>() {
        return None;
    }
    value
        .cast::<PyString>()
        .ok()?
        .to_cow()
        .ok()
        .map(|text| text.into_owned())
}

/// `value` when it is exactly an `int` from 0 to `u64::MAX`.
fn plain_u64(value: &Bound<'_, PyAny>) -> Option<u64> {
    if !value.is_exact_instance_of::<PyInt>() {
        return None;
    }
    value.extract::<u64>().ok()
}

/// `value` when it is a list of [`plain_str`]s.
fn str_list(value: &Bound<'_, PyAny>) -> Option<Vec<String>> {
    let list = value.cast::<PyList>().ok()?;
    list.iter().map(|item| plain_str(&item)).collect()
}

/// `value` when it is a dict of [`plain_str`]s by [`plain_str`]s.
fn str_map(value: &Bound<'_, PyAny>) -> Option<std::collections::BTreeMap<String, String>> {
    let dict = value.cast::<PyDict>().ok()?;
    dict.iter()
        .map(|(key, item)| Some((plain_str(&key)?, plain_str(&item)?)))
        .collect()
}

/// Makes the popoto drop-in's pattern objects of one call: see
/// [`NativeStore::call_patterns`].
struct PatternMaker<'a, 'py> {
    pattern: &'a Bound<'py, PyType>,
    partition: &'a Bound<'py, PyAny>,
    /// The class's reserved names (see [`NativeStore::call_patterns`]), read once per call.
    reserved: std::collections::HashSet<String>,
    /// `pattern.__new__`, looked up once per call.
    new: Bound<'py, PyAny>,
}

impl<'a, 'py> PatternMaker<'a, 'py> {
    fn new(
        pattern: &'a Bound<'py, PyType>,
        partition: &'a Bound<'py, PyAny>,
        reserved: &'a Bound<'py, PyFrozenSet>,
    ) -> PyResult<Self> {
        let new = pattern.getattr(intern!(pattern.py(), "__new__"))?;
        let reserved = reserved
            .iter()
            .map(|name| name.extract::<String>())
            .collect::<PyResult<_>>()?;
        Ok(PatternMaker {
            pattern,
            partition,
            reserved,
            new,
        })
    }

    /// `entry` as an instance of the pattern class: its `__dict__` holds `partition` and
    /// the entry itself, as `_native` ([`PatternData`]), from which the class fills the
    /// other attributes on first use. A recall's patterns are made on every call and often
    /// never read beyond the first; what their attributes cost is paid by the ones read.
    fn make(&self, entry: PatternEntry) -> PyResult<Bound<'py, PyAny>> {
        let py = self.pattern.py();
        if entry
            .fingerprint
            .keys()
            .any(|name| self.reserved.contains(name))
        {
            return self.made_by_init(&entry);
        }
        let attributes = PyDict::new(py);
        attributes.set_item(intern!(py, "partition"), self.partition)?;
        attributes.set_item(
            intern!(py, "_native"),
            Bound::new(py, PatternData { entry })?,
        )?;
        let object = self.new.call1((self.pattern,))?;
        object.setattr(intern!(py, "__dict__"), attributes)?;
        Ok(object)
    }

    /// `entry` made by the class's own `__init__`, from the entry as its JSON dict.
    fn made_by_init(&self, entry: &PatternEntry) -> PyResult<Bound<'py, PyAny>> {
        let py = self.pattern.py();
        let entry = serde_json::to_value(entry).map_err(|error| {
            raise(
                py,
                Failure::new(ErrorKind::Other, format!("encoding the result: {error}")),
            )
        })?;
        self.pattern.call1((self.partition, to_python(py, &entry)?))
    }
}

/// A pattern of the popoto drop-in as the store answered it, held by the pattern object
/// until its attributes are first asked for (see [`PatternMaker::make`]).
#[pyclass(frozen, module = "agent_memory._native", name = "PatternData")]
struct PatternData {
    entry: PatternEntry,
}

#[pymethods]
impl PatternData {
    /// The attributes popoto's pattern has, but `partition`, as the class's `__init__` sets
    /// them: `fingerprint`, each fingerprint field, `canonical_sequence`, `confidence`,
    /// `_last_reinforced` (the RFC 3339 text), `evidence_count`, `corroborations`,
    /// `contradictions` and, in a recall, `score`.
    fn attributes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let entry = &self.entry;
        let attributes = PyDict::new(py);
        let fingerprint = PyDict::new(py);
        attributes.set_item(intern!(py, "fingerprint"), &fingerprint)?;
        for (name, value) in &entry.fingerprint {
            let (name, value) = (PyString::new(py, name), PyString::new(py, value));
            fingerprint.set_item(&name, &value)?;
            attributes.set_item(name, value)?;
        }
        let sequence = PyList::new(py, &entry.canonical_sequence)?;
        attributes.set_item(intern!(py, "canonical_sequence"), sequence)?;
        attributes.set_item(intern!(py, "confidence"), entry.confidence)?;
        attributes.set_item(intern!(py, "_last_reinforced"), &entry.last_reinforced)?;
        attributes.set_item(intern!(py, "evidence_count"), entry.evidence_count)?;
        attributes.set_item(intern!(py, "corroborations"), entry.corroborations)?;
        attributes.set_item(intern!(py, "contradictions"), entry.contradictions)?;
        // popoto's patterns have no score: only a recall's carry one, its ranking's.
        if let Some(score) = entry.score {
            attributes.set_item(intern!(py, "score"), score)?;
        }
        Ok(attributes)
    }
}

/// popoto's extension points as Python callables, for one crystallize run.
struct PythonHooks<'a> {
    signals: Option<Py<PyAny>>,
    canonical: Option<Py<PyAny>>,
    /// The partition's episodes before the run, when `canonical` needs whole groups.
    earlier: Vec<Episode>,
    /// The first exception a callable raised, raised again when the run has failed.
    raised: &'a Mutex<Option<PyErr>>,
}

impl PythonHooks<'_> {
    /// Runs `work` with the GIL; an exception is kept for the caller and fails the step.
    fn with_python<T>(
        &self,
        what: &str,
        work: impl FnOnce(Python<'_>) -> PyResult<T>,
    ) -> agent_memory_core::Result<T> {
        Python::attach(|py| {
            work(py).map_err(|error| {
                if let Ok(mut raised) = self.raised.lock() {
                    raised.get_or_insert(error);
                }
                agent_memory_core::Error::invalid_input(what, "the Python override raised")
            })
        })
    }
}

/// An episode as the callables get it.
fn episode_dict<'py>(py: Python<'py>, episode: &Episode) -> PyResult<Bound<'py, PyAny>> {
    let e = &episode.episode;
    let outcome: Value = serde_json::from_str(&e.outcome).unwrap_or(Value::Null);
    let fingerprint: Map<String, Value> = e
        .fingerprint
        .pairs()
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let value = serde_json::json!({
        "seq": episode.seq,
        "partition": e.partition.as_str(),
        "fingerprint": fingerprint,
        "trajectory": e.trajectory,
        "outcome": outcome,
        "recorded_at": e.recorded_at.as_millis(),
    });
    to_python(py, &value)
}

impl CrystallizeHooks for PythonHooks<'_> {
    fn signals(&self, episodes: &[Episode]) -> agent_memory_core::Result<Option<Vec<f64>>> {
        let Some(signals) = &self.signals else {
            return Ok(None);
        };
        self.with_python("signals", |py| {
            let list = PyList::empty(py);
            for episode in episodes {
                list.append(episode_dict(py, episode)?)?;
            }
            signals
                .bind(py)
                .call1((list,))?
                .extract::<Vec<f64>>()
                .map(Some)
        })
    }

    fn canonical(
        &self,
        episodes: &[Episode],
        patterns: &[&agent_memory_core::store::trajectory::Fingerprint],
    ) -> agent_memory_core::Result<Vec<Option<Vec<String>>>> {
        let Some(canonical) = &self.canonical else {
            return Ok(vec![None; patterns.len()]);
        };
        // Every episode once, in sequence order: those read before the run, then the run's.
        let last = self.earlier.last().map_or(0, |e| e.seq);
        let all: Vec<&Episode> = self
            .earlier
            .iter()
            .chain(episodes.iter().filter(|e| e.seq > last))
            .collect();
        self.with_python("canonical", |py| {
            let groups = PyList::empty(py);
            for fingerprint in patterns {
                let members = PyList::empty(py);
                for episode in all
                    .iter()
                    .filter(|e| e.episode.fingerprint == **fingerprint)
                {
                    members.append(episode_dict(py, episode)?)?;
                }
                let group = PyDict::new(py);
                let pairs = PyDict::new(py);
                for (k, v) in fingerprint.pairs() {
                    pairs.set_item(k, v)?;
                }
                group.set_item("fingerprint", pairs)?;
                group.set_item("episodes", members)?;
                groups.append(group)?;
            }
            canonical
                .bind(py)
                .call1((groups,))?
                .extract::<Vec<Option<Vec<String>>>>()
        })
    }
}

/// "Now" for one call.
fn clock(now_ms: Option<i64>) -> Box<dyn Clock> {
    match now_ms {
        Some(ms) => Box::new(ManualClock::new(Timestamp::from_millis(ms))),
        None => Box::new(SystemClock),
    }
}

/// `path_or_url` as a path: a str or an `os.PathLike`.
fn path_argument(value: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    let py = value.py();
    let text = py
        .import("os")?
        .getattr("fspath")?
        .call1((value,))
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "path_or_url must be a str or os.PathLike, not {}",
                type_name(value)
            ))
        })?;
    if !text.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "path_or_url must be a str or os.PathLike of str, not {}",
            type_name(&text)
        )));
    }
    text.extract::<PathBuf>()
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|name| name.to_string())
        .unwrap_or_else(|_| "object".to_owned())
}

/// A Python value as JSON; `path` names it in errors (`input.episodes[0].trajectory`). A
/// value of a type JSON has no place for is a `TypeError`; a value JSON cannot hold (a lone
/// surrogate, an integer beyond 64 bits, NaN) is an `agent_memory.InvalidInputError`.
fn to_json(value: &Bound<'_, PyAny>, path: &mut String, depth: usize) -> PyResult<Value> {
    let py = value.py();
    let invalid =
        |path: &str, message: String| raise(py, Failure::invalid(path.to_owned(), message));
    if depth > MAX_DEPTH {
        return Err(invalid(
            path,
            format!("{path} nests deeper than {MAX_DEPTH} levels"),
        ));
    }
    if value.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if value.is_instance_of::<PyInt>() {
        if let Ok(n) = value.extract::<i64>() {
            return Ok(Value::from(n));
        }
        if let Ok(n) = value.extract::<u64>() {
            return Ok(Value::from(n));
        }
        return Err(invalid(
            path,
            format!("{path}: the integer does not fit in 64 bits"),
        ));
    }
    if let Ok(float) = value.cast::<PyFloat>() {
        let x = float.value();
        return Number::from_f64(x)
            .map(Value::Number)
            .ok_or_else(|| invalid(path, format!("{path}: {x} is not a JSON number")));
    }
    if let Ok(text) = value.cast::<PyString>() {
        return match text.to_cow() {
            Ok(text) => Ok(Value::String(text.into_owned())),
            Err(_) => Err(invalid(
                path,
                format!("{path}: the text is not valid Unicode (it holds a lone surrogate)"),
            )),
        };
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut object = Map::with_capacity(dict.len());
        for (key, item) in dict.iter() {
            let Ok(key) = key.cast::<PyString>() else {
                return Err(PyTypeError::new_err(format!(
                    "{path}: keys must be str, not {}",
                    type_name(&key)
                )));
            };
            let Ok(key) = key.to_cow() else {
                return Err(invalid(
                    path,
                    format!("{path}: a key is not valid Unicode (it holds a lone surrogate)"),
                ));
            };
            let len = path.len();
            path.push('.');
            path.push_str(&key);
            let item = to_json(&item, path, depth + 1);
            path.truncate(len);
            object.insert(key.into_owned(), item?);
        }
        return Ok(Value::Object(object));
    }
    let items = if let Ok(list) = value.cast::<PyList>() {
        list.iter().collect::<Vec<_>>()
    } else if let Ok(tuple) = value.cast::<PyTuple>() {
        tuple.iter().collect()
    } else {
        return Err(PyTypeError::new_err(format!(
            "{path}: a {} is not JSON (give a dict, list, tuple, str, int, float, bool or None)",
            type_name(value)
        )));
    };
    let mut array = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let len = path.len();
        // Written in place: a list of many items would otherwise format a string for each.
        let _ = write!(path, "[{i}]");
        let item = to_json(item, path, depth + 1);
        path.truncate(len);
        array.push(item?);
    }
    Ok(Value::Array(array))
}

/// JSON as a Python value: dicts, lists, str, int, float, bool and None.
fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(flag) => PyBool::new(py, *flag).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(text) => PyString::new(py, text).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(fields) => {
            let dict = PyDict::new(py);
            for (key, item) in fields {
                dict.set_item(key, to_python(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// The `agent-memory` command line on `args` (the program's name first), in this process
/// and without the GIL; returns its exit status.
#[pyfunction]
fn exit_status(py: Python<'_>, args: Vec<std::ffi::OsString>) -> PyResult<u8> {
    detached(py, "the command line", move || {
        Ok(agent_memory_cli::exit_status(args))
    })
}

/// popoto's fingerprint of a JSON object of features given as text (Python's `json.dumps`,
/// so integers of any size keep their digits): 16 hex characters of SHA-256, as the
/// `trajectory_fingerprint` operation answers.
#[pyfunction]
fn compute_fingerprint_json(py: Python<'_>, features: String) -> PyResult<String> {
    agent_memory_contract::trajectory::fingerprint_of(&Value::String(features))
        .map_err(|error| raise(py, error))
}

/// Refuses a configuration of the popoto drop-in that every record would refuse (empty or
/// repeated fields, a count below 1, an initial confidence outside `[0, 1]`), every problem
/// together, as the contract checks it: the drop-in calls it when it is constructed.
#[pyfunction]
#[pyo3(signature = (fields, cluster_threshold=None, evidence_cap=None, initial_confidence=None))]
fn check_trajectory_configuration(
    py: Python<'_>,
    fields: Vec<String>,
    cluster_threshold: Option<i64>,
    evidence_cap: Option<i64>,
    initial_confidence: Option<f64>,
) -> PyResult<()> {
    agent_memory_contract::trajectory::check_configuration(
        &fields,
        cluster_threshold,
        evidence_cap,
        initial_confidence,
    )
    .map_err(|error| raise(py, error))
}

/// popoto's mapping of an episode's outcome to a confidence signal in `[0, 1]`, the one the
/// store applies when it crystallizes.
#[pyfunction]
fn episode_signal(outcome: &Bound<'_, PyAny>) -> PyResult<f64> {
    let outcome = to_json(outcome, &mut "outcome".to_owned(), 0)?;
    Ok(agent_memory_contract::trajectory::episode_signal(&outcome))
}

/// popoto's `_canonical_sequence` over a group's `(trajectory, recorded_at in seconds)`
/// pairs in the order given: the modal trajectory, ties to the one whose newest episode is
/// the most recent, then to the one seen first (the store's rule).
#[pyfunction]
fn canonical_sequence(episodes: Vec<(Vec<String>, f64)>) -> Vec<String> {
    agent_memory_contract::trajectory::canonical_sequence(episodes.into_iter().map(
        |(trajectory, recorded_at)| {
            (
                trajectory,
                Timestamp::from_millis((recorded_at * 1000.0).round() as i64),
            )
        },
    ))
}

/// Runs `operation` on each of `inputs` in turn, in Rust and without the GIL, and returns
/// each call's time in nanoseconds: the library's side of the benchmark that measures what
/// the binding adds per call (inputs are converted to JSON before any clock starts).
#[cfg(feature = "bench")]
#[pyfunction]
#[pyo3(signature = (store, operation, inputs, now_ms=None))]
fn time_calls(
    py: Python<'_>,
    store: &NativeStore,
    operation: &str,
    inputs: Vec<Bound<'_, PyAny>>,
    now_ms: Option<i64>,
) -> PyResult<Vec<u64>> {
    let Some(op) = operations().iter().find(|op| op.name == operation) else {
        return Err(PyTypeError::new_err(format!(
            "there is no operation {operation:?}"
        )));
    };
    let inputs = inputs
        .iter()
        .map(|input| to_json(input, &mut "input".to_owned(), 0))
        .collect::<PyResult<Vec<Value>>>()?;
    let database = &store.database;
    detached(py, operation, move || {
        let env = Env {
            client: Some("python".to_owned()),
            store: database.store(op.effect)?,
            clock: clock(now_ms),
            ids: Box::new(RandomIds::new()),
            files: agent_memory_contract::files::FileAccess::Any,
        };
        let mut times = Vec::with_capacity(inputs.len());
        for input in inputs {
            let started = std::time::Instant::now();
            let output = op.call(&env, input)?;
            times.push(started.elapsed().as_nanos() as u64);
            drop(output);
        }
        Ok(times)
    })
}

/// Every operation of the contract as the table has it, a dict each: `name`, `family`,
/// `description`, `effect`, `mcp`, `python` (the `Store` method), `takes_input` and `output`
/// (the stem of its output schema). The package's methods are generated from the same table;
/// its tests check them against this.
#[pyfunction(name = "operations")]
fn operation_table(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let table = PyList::empty(py);
    for op in operations() {
        let entry = PyDict::new(py);
        entry.set_item("name", op.name)?;
        entry.set_item("family", op.family())?;
        entry.set_item("description", op.description)?;
        entry.set_item("effect", op.effect.as_str())?;
        entry.set_item("mcp", op.mcp)?;
        entry.set_item("python", &op.python)?;
        entry.set_item("takes_input", op.takes_input())?;
        entry.set_item("output", op.output)?;
        table.append(entry)?;
    }
    Ok(table)
}

/// The word of every kind of the contract's errors (`usage`, ..., `error`).
#[pyfunction]
fn error_kinds() -> Vec<&'static str> {
    ErrorKind::ALL.iter().map(|kind| kind.as_str()).collect()
}

/// The module `agent_memory._native`.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<NativeStore>()?;
    module.add_class::<PatternData>()?;
    module.add_function(wrap_pyfunction!(exit_status, module)?)?;
    module.add_function(wrap_pyfunction!(operation_table, module)?)?;
    module.add_function(wrap_pyfunction!(error_kinds, module)?)?;
    module.add_function(wrap_pyfunction!(compute_fingerprint_json, module)?)?;
    module.add_function(wrap_pyfunction!(episode_signal, module)?)?;
    module.add_function(wrap_pyfunction!(check_trajectory_configuration, module)?)?;
    module.add_function(wrap_pyfunction!(canonical_sequence, module)?)?;
    #[cfg(feature = "bench")]
    module.add_function(wrap_pyfunction!(time_calls, module)?)?;
    Ok(())
}
