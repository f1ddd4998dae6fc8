// The declarations of durable-agent-memory. The shapes of every input and output are
// generated from the contract's JSON Schemas (`schemas.d.ts`); this file declares the API.

import type * as S from './schemas'

export * from './schemas'

/** The `kind` of every failure, as the contract names it. */
export type ErrorKind =
  | 'usage'
  | 'invalid_input'
  | 'not_found'
  | 'conflict'
  | 'corrupt'
  | 'io'
  | 'database'
  | 'error'

/** A failure of the memory: `kind` says which, `input` names what it is about. */
export declare class AgentMemoryError extends Error {
  readonly kind: ErrorKind
  readonly input: string | undefined
  constructor(message: string, input?: string, kind?: ErrorKind)
}
/** A call the API does not allow (a closed store, an unknown operation). */
export declare class UsageError extends AgentMemoryError {
  readonly kind: 'usage'
}
/** An input that does not fit the contract: `input` names the argument or field. */
export declare class InvalidInputError extends AgentMemoryError {
  readonly kind: 'invalid_input'
}
/** Something named does not exist: a database, session, run or trajectory. */
export declare class NotFoundError extends AgentMemoryError {
  readonly kind: 'not_found'
}
/** A write that disagrees with what is stored. */
export declare class ConflictError extends AgentMemoryError {
  readonly kind: 'conflict'
}
/** Stored data that breaks the store's invariants. */
export declare class CorruptError extends AgentMemoryError {
  readonly kind: 'corrupt'
}
/** A file could not be read or written. */
export declare class IoError extends AgentMemoryError {
  readonly kind: 'io'
}
/** The database refused or failed. */
export declare class DatabaseError extends AgentMemoryError {
  readonly kind: 'database'
}

/** How a store is opened. */
export interface OpenOptions {
  /** "Now" for every call (reproducible output): a Date, RFC 3339 text or epoch milliseconds. */
  now?: Date | string | number
}

/** An operation's pair of methods: a Promise, and the same call on the calling thread. */
type Method<I, O> = {
  (input: I): Promise<O>
}
type Methods<M> = {
  [K in keyof M & string]: M[K] extends [infer I, infer O] ? Method<I, O> : never
} & {
  [K in keyof M & string as `${K}Sync`]: M[K] extends [infer I, infer O] ? (input: I) => O : never
}

/** Procedural memory: episodes in, crystallized patterns out. */
export type TrajectoryMethods = Methods<{
  record: [S.TrajectoryRecordInput, S.TrajectoryRecordOutput]
  crystallize: [S.TrajectoryCrystallizeInput, S.TrajectoryCrystallizeOutput]
  recall: [S.TrajectoryRecallInput, S.TrajectoryRecallOutput]
  patterns: [S.TrajectoryPatternsInput, S.TrajectoryPatternsOutput]
}>

/** A browser agent's memory: runs, context, the run registry. */
export type BrowserMethods = Methods<{
  recordRun: [S.BrowserRecordRunInput, S.BrowserRecordRunOutput]
  context: [S.BrowserContextInput, S.BrowserContextOutput]
  runs: [S.BrowserRunsInput, S.BrowserRunsOutput]
  resume: [S.BrowserResumeInput, S.BrowserResumeOutput]
  fork: [S.BrowserForkInput, S.BrowserForkOutput]
  runStart: [S.BrowserRunStartInput, S.BrowserRunOutput]
  runUpdate: [S.BrowserRunUpdateInput, S.BrowserRunOutput]
  runComplete: [S.BrowserRunCompleteInput, S.BrowserRunOutput]
}>

/** A coding agent's turns and the model view rendered for a provider. */
export type TurnsMethods = Methods<{
  append: [S.TurnsAppendInput, S.TurnsAppendOutput]
  view: [S.TurnsViewInput, S.TurnsViewOutput]
}>

/** Recorded tool calls, trails with memory tokens, lint and replay. */
export type RecordingMethods = Methods<{
  append: [S.RecordingAppendInput, S.RecordingAppendOutput]
  templatize: [S.RecordingTemplatizeInput, S.RecordingTemplatizeOutput]
  lint: [S.RecordingLintInput, S.RecordingLintOutput]
  nextCall: [S.RecordingNextCallInput, S.RecordingNextCallOutput]
}>

/** One open database: a SQLite file, a private in-memory database or PostgreSQL. */
export declare class Store {
  private constructor()
  /** Opens (creating if needed) a SQLite file's path, `":memory:"` or a `postgres://` URL. */
  static open(db: string, options?: OpenOptions): Promise<Store>
  /** `Store.open` on the calling thread. */
  static openSync(db: string, options?: OpenOptions): Store
  /** The database, as messages show it (a URL without its password). */
  readonly location: string
  /** Whether `close` was called. */
  readonly closed: boolean
  /** Closes the store; calls in flight finish, later ones fail with a `UsageError`. */
  close(): void

  readonly trajectory: TrajectoryMethods
  readonly browser: BrowserMethods
  readonly turns: TurnsMethods
  readonly recording: RecordingMethods

  /** Everything the memory holds, with counts. */
  list(input?: Record<string, never>): Promise<S.MemoryListOutput>
  listSync(input?: Record<string, never>): S.MemoryListOutput
  /** Forgets one partition, session, scope (or site), run or trajectory for good. */
  forget(input: S.MemoryForgetInput): Promise<S.MemoryForgetOutput>
  forgetSync(input: S.MemoryForgetInput): S.MemoryForgetOutput
  /** The database, its schema version, size and rows per table. */
  stats(input?: Record<string, never>): Promise<S.MemoryStatsOutput>
  statsSync(input?: Record<string, never>): S.MemoryStatsOutput
  /** SQLite's integrity check and the store's invariants (a SQLite file only). */
  check(input?: Record<string, never>): Promise<S.CheckOutput>
  checkSync(input?: Record<string, never>): S.CheckOutput
  /**
   * One command of Anthropic's memory tool (`view`, `create`, `str_replace`, `insert`,
   * `delete`, `rename`) or a `search`, on a scope's `/memories` notes; `text` is the tool's
   * answer.
   */
  notes(input: S.NotesInput): Promise<S.NotesOutput>
  notesSync(input: S.NotesInput): S.NotesOutput

  /** Runs a contract operation by name (as `operations()` lists them). */
  call<K extends keyof OperationTypes>(name: K, input: OperationTypes[K][0]): Promise<OperationTypes[K][1]>
  callSync<K extends keyof OperationTypes>(name: K, input: OperationTypes[K][0]): OperationTypes[K][1]
}

/** Each operation's input and output types, by name. */
export interface OperationTypes {
  trajectory_record: [S.TrajectoryRecordInput, S.TrajectoryRecordOutput]
  trajectory_crystallize: [S.TrajectoryCrystallizeInput, S.TrajectoryCrystallizeOutput]
  trajectory_recall: [S.TrajectoryRecallInput, S.TrajectoryRecallOutput]
  trajectory_patterns: [S.TrajectoryPatternsInput, S.TrajectoryPatternsOutput]
  browser_record_run: [S.BrowserRecordRunInput, S.BrowserRecordRunOutput]
  browser_context: [S.BrowserContextInput, S.BrowserContextOutput]
  browser_runs: [S.BrowserRunsInput, S.BrowserRunsOutput]
  browser_resume: [S.BrowserResumeInput, S.BrowserResumeOutput]
  browser_fork: [S.BrowserForkInput, S.BrowserForkOutput]
  browser_run_start: [S.BrowserRunStartInput, S.BrowserRunOutput]
  browser_run_update: [S.BrowserRunUpdateInput, S.BrowserRunOutput]
  browser_run_complete: [S.BrowserRunCompleteInput, S.BrowserRunOutput]
  turns_append: [S.TurnsAppendInput, S.TurnsAppendOutput]
  turns_view: [S.TurnsViewInput, S.TurnsViewOutput]
  recording_append: [S.RecordingAppendInput, S.RecordingAppendOutput]
  recording_templatize: [S.RecordingTemplatizeInput, S.RecordingTemplatizeOutput]
  recording_lint: [S.RecordingLintInput, S.RecordingLintOutput]
  recording_next_call: [S.RecordingNextCallInput, S.RecordingNextCallOutput]
  memory_list: [Record<string, never> | undefined, S.MemoryListOutput]
  memory_forget: [S.MemoryForgetInput, S.MemoryForgetOutput]
  memory_stats: [Record<string, never> | undefined, S.MemoryStatsOutput]
  check: [Record<string, never> | undefined, S.CheckOutput]
  notes: [S.NotesInput, S.NotesOutput]
}

/** One operation of the contract. */
export interface OperationInfo {
  name: string
  effect: 'reads' | 'writes' | 'deletes'
  description: string
  output: string
  takesInput: boolean
}

/** Every operation of the contract. */
export declare function operations(): OperationInfo[]

/** Runs the `agent-memory` command line in this process; returns its exit status. */
export declare function runCli(args: string[]): number

/** A command of Anthropic's memory tool (`memory_20250818`), as the model sends it. */
export type MemoryToolCommand =
  | { command: 'view'; path: string; view_range?: number[] | null }
  | { command: 'create'; path: string; file_text: string }
  | { command: 'str_replace'; path: string; old_str: string; new_str: string }
  | { command: 'insert'; path: string; insert_line: number; insert_text: string }
  | { command: 'delete'; path: string }
  | { command: 'rename'; old_path: string; new_path: string }

/**
 * The handlers of Anthropic's memory tool, one per command, as the Anthropic SDK's
 * `betaMemoryTool` (`@anthropic-ai/sdk/helpers/beta/memory`) takes them: each resolves with
 * the tool's text and rejects with an `Error` whose message is the tool's error text.
 */
export type MemoryToolHandlers = {
  [K in MemoryToolCommand['command']]: (command: Extract<MemoryToolCommand, { command: K }>) => Promise<string>
}

/** Where the memory tool keeps its notes. */
export interface MemoryToolOptions {
  /** Whose `/memories` tree: each scope is one of its own (`default` when absent). */
  scope?: string
  /** Values never stored or shown, by name: each occurrence becomes `${name}`. */
  secrets?: Record<string, string>
}

/** Anthropic's memory tool on `store`'s notes: `betaMemoryTool(memoryToolHandlers(store, { scope }))`. */
export declare function memoryToolHandlers(store: Store, options?: MemoryToolOptions): MemoryToolHandlers
