//! Recordings of agent tool calls that survive a change of memory.
//!
//! An agent session resolves `${merchant_email}` from memory before a tool runs, so its log
//! holds the literal address. This crate turns such literals back into tokens when it
//! generates a recording (reverse templating, with a report of every substitution), reads
//! and writes Trailblaze trail YAML in both its forms with Trailblaze's whole grammar, reads
//! Trailblaze's own tool logs, and replays a trail on a device as Trailblaze runs it: one
//! call at a time, each resolved against memory as the earlier tools left it ([`Replayer`]).
//! Secrets never leave process memory: a sensitive value becomes its token in every log,
//! recording, store row and replay output.
//!
//! ```
//! use agent_memory_core::Timestamp;
//! use agent_memory_recording::{Memory, Provenance, Snapshot, TemplatePolicy, interpolate, templatize, MissingKeys};
//! use serde_json::json;
//!
//! let at = Timestamp::from_millis(1);
//! let mut memory = Memory::new();
//! memory.remember("merchant_email", "shop+abc123@example.com", Provenance::tool("merchantFactory_load", at));
//! memory.remember_secret("password", "9999zq", Provenance::unknown(at));
//! let snapshot = memory.snapshot();
//!
//! let call = json!({"email": "shop+abc123@example.com", "password": "9999zq", "country": "US"});
//! let templated = templatize(&call, &snapshot, &TemplatePolicy::default())?;
//! assert_eq!(*templated.parameters, json!({"email": "${merchant_email}", "password": "${password}", "country": "US"}));
//! assert_eq!(*interpolate(&templated.parameters, &snapshot, MissingKeys::Fail)?, call);
//! # Ok::<(), agent_memory_recording::Error>(())
//! ```

#![deny(missing_docs)]

mod args;
mod config;
mod error;
mod generate;
mod interpolate;
mod lint;
mod log_json;
mod memory;
mod path;
mod replay;
mod templatize;
mod trail;
mod yaml11;

pub use args::Args;
pub use config::{ArgDeclaration, ArgType, Config};
pub use error::{Error, MissingKey, Result};
pub use generate::{
    GeneratedRecording, GenerationPolicy, Objective, ToolOutcome, capture, generate_recording,
};
pub use interpolate::{MissingKeys, interpolate, interpolate_str};
pub use lint::{Found, Origin, StaleLiteral, lint_trail};
pub use log_json::{
    SkipReason, SkippedLog, ToolLogFile, read_tool_logs, tool_log_from_json, tool_log_to_json,
};
pub use memory::{Lookup, Memory, MemoryEntry, Provenance, Snapshot, SnapshotItem};
pub use path::MAX_DEPTH;
pub use replay::{
    Action, Dispatch, MemoryWrites, PlannedStep, ReplayOptions, Replayer, ResolvedCall, Seeds,
    StepAction,
};
pub use templatize::{
    DEFAULT_KNOWN_WRITERS, Reason, SnapshotIndex, Substitution, TemplatePolicy, Templated,
    baseline, templatize,
};
pub use trail::{
    DeviceRecordings, LegacyItem, LegacyRecording, LegacyTrailhead, Step, StepKind, ToolCall,
    Trail, UnifiedTrail,
};
