//! The native part of the npm package `durable-agent-memory`: a door onto the JSON contract
//! (`agent-memory-contract`) and the command line (`agent-memory-cli`), nothing more.
//!
//! It converts values (JavaScript objects to `serde_json::Value` and back, through napi's
//! `serde-json` feature) and maps errors (each to its contract `kind`, `message` and `input`);
//! every rule of the memory stays in the crates below. Store calls run on libuv's thread pool
//! ([`AsyncTask`]) and resolve a Promise; the `...Sync` variants run on the calling thread.
//! The TypeScript around it (`ts/index.ts`) turns these functions into the package's camelCase
//! methods and its `Error` subclasses.

#![deny(missing_docs)]

#[cfg(feature = "bench")]
pub mod bench;

/// Every allocation of the addon (the store, the contract, SQLite's through Rust) comes from
/// mimalloc rather than the process's malloc, which V8 shares.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use agent_memory_contract::database::{self, Database, Store};
use agent_memory_contract::operations::{Effect, Operation};
use agent_memory_contract::{Env as OperationEnv, Error as ContractError, operations};
use agent_memory_core::{Clock, ManualClock, RandomIds, SystemClock, Timestamp};
use napi::bindgen_prelude::{AsyncTask, Either, Env, Result, ToNapiValue, TypeName, ValueType};
use napi::{Error, Task};
use napi_derive::napi;
use serde_json::{Value, json};

/// A failure as the wrapper receives it: the error's `code` is the contract's kind and its
/// message the JSON of the contract's error body, so `ts/errors.ts` can build the right class.
fn failure(kind: &str, message: String, input: Option<&str>) -> Error {
    let body = json!({ "kind": kind, "message": message, "input": input });
    Error::new(napi::Status::GenericFailure, body.to_string())
}

/// The contract's classification of an error, as a failure for JavaScript.
fn contract_failure(error: ContractError) -> Error {
    failure(
        error.kind().as_str(),
        error.message().to_owned(),
        error.input(),
    )
}

/// The database shared by a JavaScript `Store` and its calls in flight: closing empties the
/// slot, and a call already running keeps its own reference until it ends.
type Slot = Arc<Mutex<Option<Arc<Database>>>>;

/// One open database, as JavaScript holds it.
#[napi]
pub struct NativeStore {
    slot: Slot,
    now: Option<i64>,
    location: String,
}

/// The database `db` and its description for messages (a URL loses its password): an
/// existing one opened, a SQLite file that does not exist yet left for the first write to
/// create (a read before it answers as on an empty memory).
fn open_store(db: &str) -> Result<(Arc<Database>, String)> {
    let path = Path::new(db);
    let database = Database::new(path, &agent_memory_core::SharedClock::default())
        .map_err(contract_failure)?;
    Ok((Arc::new(database), database::describe(path)))
}

/// The store for `operation` on `input`: the database once it is opened; before, what the
/// call does decides whether it is opened (a write) or answered from an empty memory (a
/// read).
fn store_for<'d>(
    database: &'d Database,
    operation: &Operation,
    input: &Input<'_>,
) -> std::result::Result<&'d Store, ContractError> {
    if let Some(store) = database.opened() {
        return Ok(store);
    }
    let effect = match (operation.effect, input) {
        (Effect::Reads, _) => Effect::Reads,
        (_, Input::Value(value)) => operation.effect_on(value),
        (effect, Input::Text(text)) => {
            serde_json::from_str::<Value>(text).map_or(effect, |value| operation.effect_on(&value))
        }
    };
    database.store(effect)
}

/// `value` with every whole number JavaScript gave as a float made an integer: napi converts
/// a JS number outside the 32-bit range to a float, and the contract's counts and epoch
/// milliseconds are integers. Beyond 2^53 a JS number is no exact integer and stays a float.
fn integers(value: &mut Value) {
    const SAFE: f64 = 9_007_199_254_740_991.0;
    match value {
        Value::Number(n) => {
            if let Some(f) = n
                .as_f64()
                .filter(|f| n.is_f64() && f.fract() == 0.0 && f.abs() <= SAFE)
            {
                // The guard makes the cast exact.
                #[allow(clippy::cast_possible_truncation)]
                let whole = f as i64;
                *n = whole.into();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integers),
        Value::Object(fields) => fields.values_mut().for_each(integers),
        _ => {}
    }
}

/// The largest integer napi turns into a JavaScript number rather than a BigInt: 2^53 - 1.
const SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// Whether `JSON.parse` of `text`, JSON that `serde_json` wrote, makes the same JavaScript
/// value as napi's conversion of the `Value` it parses to: it does unless an integer is beyond
/// 2^53 - 1 (napi makes a BigInt of it, `JSON.parse` a number) or a key is `__proto__` (napi
/// sets it through the prototype's setter, `JSON.parse` makes an own property). One pass over
/// the bytes: `serde_json` escapes only quotes, backslashes and control characters, so a
/// `__proto__` key is always written as those nine letters, and a string `"__proto__"`
/// anywhere (a key or not) is taken as one.
fn parses_alike(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'"' => {
                let start = at + 1;
                at = start;
                while let Some(&inner) = bytes.get(at) {
                    match inner {
                        b'\\' => at += 2,
                        b'"' => break,
                        _ => at += 1,
                    }
                }
                if bytes.get(start..at) == Some(b"__proto__".as_slice()) {
                    return false;
                }
                at += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = at;
                while bytes
                    .get(at)
                    .is_some_and(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                {
                    at += 1;
                }
                let number = &text[start..at];
                // Only an integer of 16 digits or more can be beyond 2^53 - 1; a number with a
                // fraction or an exponent is a float on both sides.
                if number.len() > 15
                    && !number.contains(['.', 'e', 'E'])
                    && !number
                        .parse::<i64>()
                        .is_ok_and(|n| (-SAFE_INTEGER..=SAFE_INTEGER).contains(&n))
                {
                    return false;
                }
            }
            _ => at += 1,
        }
    }
    true
}

/// An operation's answer, JSON text, for JavaScript: the text itself for the caller to
/// `JSON.parse` where that makes the same value (one string crosses into JavaScript instead
/// of an object built a property at a time), else the value napi converts.
pub(crate) fn for_javascript(text: String) -> Either<String, Value> {
    if parses_alike(&text) {
        return Either::A(text);
    }
    // The text is `serde_json`'s own writing, so it parses; were it not JSON, `JSON.parse`
    // would throw on it as it crossed.
    match serde_json::from_str(&text) {
        Ok(value) => Either::B(value),
        Err(_) => Either::A(text),
    }
}

/// An operation's input as it came from JavaScript, for deciding whether the call writes.
enum Input<'a> {
    /// An object napi converted.
    Value(&'a Value),
    /// The text of `JSON.stringify`.
    Text(&'a str),
}

/// The operation `name`, or a `usage` failure.
fn operation(name: &str) -> Result<&'static Operation> {
    operations::find(name).ok_or_else(|| {
        failure(
            "usage",
            format!("no operation named {name:?}"),
            Some("name"),
        )
    })
}

/// What `operation` runs with on `database` for `input`: its store and clock (fixed at `now`,
/// in milliseconds, when given).
fn env_for<'d>(
    database: &'d Database,
    now: Option<i64>,
    operation: &Operation,
    input: &Input<'_>,
) -> Result<OperationEnv<'d>> {
    let clock: Box<dyn Clock> = match now {
        Some(ms) => Box::new(ManualClock::new(Timestamp::from_millis(ms))),
        None => Box::new(SystemClock),
    };
    let store = store_for(database, operation, input).map_err(contract_failure)?;
    Ok(OperationEnv {
        client: Some("node".to_owned()),
        store,
        clock,
        ids: Box::new(RandomIds::new()),
        // A program in the same process names its own files, as on the command line.
        files: agent_memory_contract::files::FileAccess::Any,
    })
}

/// Runs the operation `name` on `database` with `input`, an object napi converted (whose
/// numbers are all floats).
pub(crate) fn call_value(
    database: &Database,
    now: Option<i64>,
    name: &str,
    mut input: Value,
) -> Result<Value> {
    let operation = operation(name)?;
    let env = env_for(database, now, operation, &Input::Value(&input))?;
    integers(&mut input);
    operation.call(&env, input).map_err(contract_failure)
}

/// Runs the operation `name` on `database` with `input`, the text of `JSON.stringify` (whose
/// whole numbers are written as integers), and answers as [`for_javascript`] does.
pub(crate) fn call_text(
    database: &Database,
    now: Option<i64>,
    name: &str,
    input: &str,
) -> Result<Either<String, Value>> {
    let operation = operation(name)?;
    let env = env_for(database, now, operation, &Input::Text(input))?;
    let answer = operation.call_text(&env, input).map_err(contract_failure)?;
    Ok(for_javascript(answer))
}

#[napi]
impl NativeStore {
    /// Opens `db`, a SQLite file's path, `":memory:"` or a `postgres://` URL, on the calling
    /// thread: a SQLite file that does not exist yet is created by the first write, and a
    /// read before it answers as on an empty memory. `now`, in milliseconds since the epoch,
    /// fixes the clock of every call.
    #[napi(factory)]
    pub fn open_sync(db: String, now: Option<i64>) -> Result<Self> {
        let (store, location) = open_store(&db)?;
        Ok(NativeStore {
            slot: Arc::new(Mutex::new(Some(store))),
            now,
            location,
        })
    }

    /// Runs the contract operation `name` with its JSON input, off the JavaScript thread.
    #[napi(ts_return_type = "Promise<unknown>")]
    pub fn call(&self, name: String, input: Value) -> Result<AsyncTask<CallTask>> {
        let store = self.store()?;
        Ok(AsyncTask::new(CallTask {
            store,
            now: self.now,
            name,
            input: Some(input),
        }))
    }

    /// Runs the contract operation `name` with its input as JSON text, off the JavaScript
    /// thread; resolves as [`NativeStore::call_json_sync`] answers.
    #[napi(ts_return_type = "Promise<unknown>")]
    pub fn call_json(&self, name: String, input: String) -> Result<AsyncTask<CallJsonTask>> {
        let store = self.store()?;
        Ok(AsyncTask::new(CallJsonTask {
            store,
            now: self.now,
            name,
            input,
        }))
    }

    /// Runs the contract operation `name` with its JSON input, on the calling thread.
    #[napi]
    pub fn call_sync(&self, name: String, input: Value) -> Result<Value> {
        let store = self.store()?;
        call_value(&store, self.now, &name, input)
    }

    /// Runs the contract operation `name` with its input as JSON text, on the calling thread:
    /// one string crosses from JavaScript instead of an object read a property at a time.
    /// Answers with the output as JSON text where `JSON.parse` makes the same value, else the
    /// value itself.
    #[napi(ts_return_type = "string | unknown")]
    pub fn call_json_sync(&self, name: String, input: String) -> Result<Either<String, Value>> {
        let store = self.store()?;
        call_text(&store, self.now, &name, &input)
    }

    /// Closes the store: later calls fail with a `usage` error; calls in flight finish.
    #[napi]
    pub fn close(&self) {
        self.slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    /// Whether [`NativeStore::close`] was called.
    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    /// The database, as messages show it (a URL without its password).
    #[napi(getter)]
    pub fn location(&self) -> String {
        self.location.clone()
    }

    fn store(&self) -> Result<Arc<Database>> {
        self.slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| {
                failure(
                    "usage",
                    format!("the store {} is closed", self.location),
                    Some("store"),
                )
            })
    }
}

/// Opening a store off the JavaScript thread.
pub struct OpenTask {
    db: String,
    now: Option<i64>,
}

impl Task for OpenTask {
    type Output = (Arc<Database>, String);
    type JsValue = NativeStore;

    fn compute(&mut self) -> Result<Self::Output> {
        open_store(&self.db)
    }

    fn resolve(&mut self, _env: Env, (store, location): Self::Output) -> Result<NativeStore> {
        Ok(NativeStore {
            slot: Arc::new(Mutex::new(Some(store))),
            now: self.now,
            location,
        })
    }
}

/// Opens `db` (see [`NativeStore::open_sync`]) off the JavaScript thread.
#[napi(ts_return_type = "Promise<NativeStore>")]
pub fn open(db: String, now: Option<i64>) -> AsyncTask<OpenTask> {
    AsyncTask::new(OpenTask { db, now })
}

/// One operation call off the JavaScript thread.
pub struct CallTask {
    store: Arc<Database>,
    now: Option<i64>,
    name: String,
    input: Option<Value>,
}

impl Task for CallTask {
    type Output = Value;
    type JsValue = Json;

    fn compute(&mut self) -> Result<Value> {
        let input = self.input.take().unwrap_or(Value::Null);
        call_value(&self.store, self.now, &self.name, input)
    }

    fn resolve(&mut self, _env: Env, output: Value) -> Result<Json> {
        Ok(Json(output))
    }
}

/// [`NativeStore::call_json`]'s work: the input as JSON text, parsed on the worker thread.
pub struct CallJsonTask {
    store: Arc<Database>,
    now: Option<i64>,
    name: String,
    input: String,
}

impl Task for CallJsonTask {
    type Output = Either<String, Value>;
    type JsValue = Either<String, Json>;

    fn compute(&mut self) -> Result<Either<String, Value>> {
        call_text(&self.store, self.now, &self.name, &self.input)
    }

    fn resolve(
        &mut self,
        _env: Env,
        output: Either<String, Value>,
    ) -> Result<Either<String, Json>> {
        Ok(match output {
            Either::A(text) => Either::A(text),
            Either::B(value) => Either::B(Json(value)),
        })
    }
}

/// A JSON value resolved by a Promise: napi converts `serde_json::Value` but does not name its
/// TypeScript type, which a task's result needs.
pub struct Json(Value);

impl TypeName for Json {
    fn type_name() -> &'static str {
        "unknown"
    }

    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ToNapiValue for Json {
    /// # Safety
    ///
    /// As `serde_json::Value`'s conversion: `env` must be the current call's environment.
    unsafe fn to_napi_value(
        env: napi::sys::napi_env,
        value: Self,
    ) -> Result<napi::sys::napi_value> {
        // SAFETY: the caller's `env` is passed through unchanged.
        unsafe { Value::to_napi_value(env, value.0) }
    }
}

/// One operation of the contract, as `operations()` lists it.
#[napi(object)]
pub struct OperationInfo {
    /// Its name, the stem of its schemas.
    pub name: String,
    /// Its family (`trajectory`, ..., `admin`).
    pub family: String,
    /// `reads`, `writes` or `deletes`.
    pub effect: String,
    /// When to call it.
    pub description: String,
    /// Its method on the package's `Store`: `group.method` or `method`.
    pub node: String,
    /// The stem of its output schema.
    pub output: String,
    /// Whether it takes a JSON input.
    pub takes_input: bool,
}

/// Every operation of the contract, as its operation table has them.
#[napi]
pub fn operations() -> Vec<OperationInfo> {
    operations::table()
        .iter()
        .map(|op| OperationInfo {
            name: op.name.to_owned(),
            family: op.family().to_owned(),
            effect: op.effect.as_str().to_owned(),
            description: op.description.to_owned(),
            node: op.node.clone(),
            output: op.output.to_owned(),
            takes_input: op.takes_input(),
        })
        .collect()
}

/// Every kind of error the contract has, as the words its failures carry.
#[napi]
pub fn error_kinds() -> Vec<String> {
    agent_memory_contract::ErrorKind::ALL
        .iter()
        .map(|kind| kind.as_str().to_owned())
        .collect()
}

/// Runs the `agent-memory` command line in-process on `args` (without the program's name)
/// and returns its exit status. It blocks the calling thread: the package's `bin` calls it
/// and exits with the status.
#[napi]
pub fn run_cli(args: Vec<String>) -> u32 {
    let status = agent_memory_cli::run(std::iter::once("agent-memory".to_owned()).chain(args));
    // `ExitCode` does not expose its number; the command line only returns 0, 1 and 2.
    (0..=u8::MAX)
        .find(|code| std::process::ExitCode::from(*code) == status)
        .map_or(1, u32::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_floats_become_integers_and_fractions_stay() {
        let mut value = json!({
            "at": 1_767_225_600_000.0_f64,
            "items": [2.0_f64, 2.5_f64, -3.0_f64, 1e300_f64],
            "n": 7,
        });
        integers(&mut value);
        assert_eq!(value["at"], json!(1_767_225_600_000_i64));
        assert!(value["at"].is_i64());
        assert_eq!(value["items"][0], json!(2));
        assert!(value["items"][1].is_f64());
        assert!(value["items"][2].is_i64());
        assert!(
            value["items"][3].is_f64(),
            "beyond 2^53 a number is no exact integer"
        );
        assert_eq!(value["n"], json!(7));
    }

    /// The rule [`parses_alike`] applies to text, on the value itself (napi's conversion
    /// and `JSON.parse` differ only on an integer beyond 2^53 - 1 and a `__proto__` key).
    fn value_parses_alike(value: &Value) -> bool {
        match value {
            Value::Number(n) => {
                n.is_f64()
                    || n.as_i64()
                        .is_some_and(|i| (-SAFE_INTEGER..=SAFE_INTEGER).contains(&i))
            }
            Value::Array(items) => items.iter().all(value_parses_alike),
            Value::Object(fields) => fields
                .iter()
                .all(|(key, field)| key != "__proto__" && value_parses_alike(field)),
            Value::Null | Value::Bool(_) | Value::String(_) => true,
        }
    }

    #[test]
    fn the_text_parses_alike_exactly_when_its_value_does() {
        let values = [
            json!({"id": "traj_1", "steps": [{"action": {"action": "click"}, "hash": "18446744073709551615"}]}),
            json!(9_007_199_254_740_991_i64),
            json!(-9_007_199_254_740_991_i64),
            json!(9_007_199_254_740_992_i64),
            json!(-9_007_199_254_740_992_i64),
            json!(u64::MAX),
            json!(i64::MIN),
            json!([
                1e300,
                9_007_199_254_740_993.5,
                -0.0,
                1e-7,
                123_456_789_012_345_678.0
            ]),
            json!({"quoted \"12345678901234567890\" \\": [1, {"n": 12_345_678_901_234_567_i64}]}),
            json!({"text": "ends in a backslash \\", "n": 18_014_398_509_481_984_u64}),
            json!({"a": {"__proto__": 1}}),
            json!({"a": {"__proto__x": 1, "x__proto__": [0]}}),
            json!("line\nbreak \u{1} \"__proto__"),
            json!([]),
        ];
        for value in values {
            let text = value.to_string();
            assert_eq!(parses_alike(&text), value_parses_alike(&value), "{text}");
        }
        // A string "__proto__" that is no key is taken as one: JSON.parse and napi would
        // agree, and the answer only goes the longer way.
        assert!(!parses_alike(r#"{"kind":"__proto__"}"#));
    }

    #[test]
    fn an_answer_that_would_parse_otherwise_crosses_as_its_value() {
        let text = json!({"big": u64::MAX, "small": 1}).to_string();
        let Either::B(value) = for_javascript(text) else {
            panic!("a big integer crosses as a value");
        };
        assert_eq!(value["big"].as_u64(), Some(u64::MAX));
        let text = json!({"small": 1.5}).to_string();
        assert!(matches!(for_javascript(text.clone()), Either::A(same) if same == text));
    }
}
