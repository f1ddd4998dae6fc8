// A drop-in for browser-agent-driver's memory classes (`TrajectoryStore`, `AppKnowledge`,
// `SelectorCache`, `ProjectStore`): the same names, constructor arguments, methods and
// results, backed by one agent-memory database instead of JSON files.
//
// The database is the one given to `useDatabase(db)`, else `$AGENT_MEMORY_DB`, else
// `agent-memory.db` in the working folder (as the `agent-memory` command line). The paths the
// classes are constructed with keep memories apart as they kept files apart: each folder is a
// memory scope of its own (named by its absolute path), so two stores on one folder share
// their memory and stores on two folders never see each other's. Files the reference's class
// kept at that path (a trajectories folder, a `knowledge.json`, a `selectors.json`, an
// `agent-runs/` folder) are adopted into the folder's scope the first time a class uses it in a
// process (the contract's `browser_adopt_files`): what the scope does not hold yet is stored,
// what it holds stays, so the database is the memory from then on and the files are never
// written. Every write is durable when the call returns, so `save()` has nothing left to do. Each method is one call of a contract
// operation (`browser_save_trajectory`, `browser_match`, ...), which takes and answers the
// reference's objects in its own shape; the rules (matching, confidence, pruning, ranking,
// rendering) are the browser memory's own, below the contract.
//
// `TrajectoryAnalyzer` reads a test suite's results, which live with the caller: its analysis
// is computed here, its hints by the browser memory's own rules (`browser_suite_hints`).

import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import type { NativeStore } from '../native.js'
import { native } from './native-binding.js'
import { fromNative } from './errors.js'
import { InvalidInputError } from './generated/errors.js'
import { wellFormed } from './plain-json.js'

/**
 * The action a turn took: its kind, and whatever fields that kind has (read as JSON). Either
 * form, so that both the reference's action interfaces (which have no index signature) and an
 * object literal with the kind's fields fit.
 */
export type TurnAction = { action: string } | { action: string; [field: string]: unknown }

/** A turn of a run, as the agent reports it. */
export interface Turn {
  turn?: number
  state: { url: string; title?: string; snapshot?: string }
  action: TurnAction
  durationMs: number
  error?: string
  verified?: boolean
  verificationFailure?: string
  expectedEffect?: string
  reasoning?: string
}

/** One saved step. */
export interface TrajectoryStep {
  url: string
  action: { action: string; [field: string]: unknown }
  snapshotHash: string
  verified: boolean
  expectedEffect?: string
}

/** A saved run. */
export interface Trajectory {
  id: string
  goal: string
  origin?: string
  steps: TrajectoryStep[]
  success: boolean
  durationMs: number
  model: string
  timestamp: string
}

/** How a `TrajectoryStore` matches goals. */
export interface TrajectoryStoreOptions {
  similarityThreshold?: number
  enableScoring?: boolean
  ttlDays?: number
}

/** A trajectory to replay without a model. */
export interface ReplayCandidate {
  trajectory: Trajectory
  similarity: number
  origin: string | null
}

/** What a site fact is about. */
export type FactType = 'timing' | 'selector' | 'pattern' | 'quirk'

/** A fact learned about a site. */
export interface Fact {
  type: FactType
  key: string
  value: string
  confidence: number
  sources: number
  lastSeen: string
}

/** A previous run on a site. */
export interface Session {
  id: string
  goal: string
  outcome: string
  success: boolean
  finalUrl: string
  timestamp: string
  turnsUsed: number
  durationMs: number
}

/** A selector that worked for an element. */
export interface SelectorEntry {
  element: string
  lastRef?: string
  stableSelector?: string
  successCount: number
  lastUsed: string
}

/** A test case's result, as browser-agent-driver's test runner reports it (the fields read here). */
export interface TestResult {
  testCase: { id: string; name: string; goal: string; startUrl?: string }
  agentResult: { success?: boolean; turns: Turn[] }
  agentSuccess: boolean
  verified: boolean
  verdict?: string
  skipped?: boolean
  criteriaResults?: Array<{ criterion?: unknown; passed: boolean; detail?: string }>
  turnsUsed: number
  durationMs: number
}

/** A test suite's results. */
export interface TestSuiteResult {
  model: string
  timestamp: string
  results: TestResult[]
  summary: {
    total: number
    passed: number
    failed: number
    passRate: number
    avgTurns: number
    avgDurationMs: number
    totalDurationMs: number
  }
}

/** A suite summary as `saveRunSummary` keeps it. */
export interface RunSummary {
  id: string
  model: string
  timestamp: string
  total: number
  passed: number
  failed: number
  passRate: number
  avgTurns: number
  avgDurationMs: number
  totalDurationMs: number
  tests: Array<{ id: string; name: string; verified: boolean; turnsUsed: number; durationMs: number }>
}

/** How often an action (on a selector) was taken and failed. */
export interface ActionPattern {
  action: string
  selector?: string
  occurrences: number
  failures: number
  failureRate: number
}

/** How the tests sharing a goal's first line went. */
export interface GoalPattern {
  goalPrefix: string
  attempts: number
  successes: number
  avgTurns: number
  avgDurationMs: number
  commonFailures: string[]
}

/** Turns of one test that did not move it forward. */
export interface TurnWaste {
  category: 'stale-ref' | 'repeated-action' | 'stuck-loop' | 'error' | 'unnecessary-wait'
  turnNumbers: number[]
  description: string
}

/** A test suite's analysis. */
export interface RunAnalysis {
  timestamp: string
  suiteModel: string
  totalTests: number
  passRate: number
  turnEfficiency: { totalTurns: number; productiveTurns: number; wastedTurns: number; efficiencyRate: number }
  verificationGaps: { agentSaysSuccess: number; groundTruthConfirms: number; falsePositiveRate: number }
  actionPatterns: ActionPattern[]
  goalPatterns: GoalPattern[]
  wasteBreakdown: TurnWaste[]
  topFailureReasons: string[]
}

/** Where a run is. */
export type RunStatus = 'running' | 'completed' | 'failed'

/** A registered run. */
export interface RunManifest {
  runId: string
  sessionId?: string
  parentRunId?: string
  status: RunStatus
  goal: string
  domain: string
  startUrl?: string
  finalUrl?: string
  currentUrl?: string
  startedAt: string
  updatedAt: string
  completedAt?: string
  success?: boolean
  summary?: string
  artifactPaths: string[]
  turnCount: number
  result?: string
  reason?: string
}

/** Which runs `listRuns` returns. */
export interface RunFilters {
  domain?: string
  sessionId?: string
  status?: RunStatus
  limit?: number
}

/** Where a resumed or forked run starts. */
export interface Scenario {
  goal: string
  startUrl: string
  sessionId: string
  parentRunId: string
}

/** `now` as `useDatabase` and `Store.open` take it. */
type Now = Date | string | number

let chosen: string | undefined
let frozen: number | undefined
const open = new Map<string, NativeStore>()

/**
 * Makes the drop-in classes use `db` (a SQLite path, `":memory:"` or a postgres:// URL);
 * `options.now` (a `Date`, an RFC 3339 time or milliseconds) fixes "now" for every call, as
 * `Store.open`'s option does.
 */
export function useDatabase(db: string, options: { now?: Now } = {}): void {
  if (typeof db !== 'string' || db.length === 0) {
    throw new InvalidInputError('db must be a SQLite file path, ":memory:" or a postgres:// URL', 'db')
  }
  const now: unknown = options?.now
  const ms: unknown =
    now === undefined || now === null ? undefined : now instanceof Date ? now.getTime() : typeof now === 'string' ? Date.parse(now) : now
  if (ms !== undefined && !Number.isSafeInteger(ms)) {
    throw new InvalidInputError('options.now must be a Date, an RFC 3339 time or milliseconds since the epoch', 'options.now')
  }
  chosen = db
  frozen = ms as number | undefined
}

/** The native store of the database in use, opened once per process (and per frozen clock). */
function database(): NativeStore {
  const key = databaseKey()
  const db = key.slice(key.indexOf('\u0000') + 1)
  let store = open.get(key)
  if (!store) {
    store = call(() => native.NativeStore.openSync(db, frozen))
    open.set(key, store)
  }
  return store
}

/** Which database (and frozen clock) the classes use now. */
function databaseKey(): string {
  const db = chosen ?? process.env.AGENT_MEMORY_DB ?? path.join(process.cwd(), 'agent-memory.db')
  return `${frozen ?? ''}\u0000${db}`
}

/** The files one of the reference's classes kept, and the memory scope that adopts them. */
interface ClassFolder {
  scope: string
  kind: 'trajectories' | 'knowledge' | 'selectors' | 'runs'
  /** The folder (trajectories, runs) or file (knowledge, selectors), absolute. */
  path: string
  /** The site of knowledge and selectors. */
  url?: string
}

const adoptedOn = new Set<string>()

/**
 * The scope of a class's memory, once the files the reference's class kept at its path are
 * adopted into it (the contract's `browser_adopt_files`, once per process and database, and
 * only when the path exists): records the scope does not hold yet are stored, those it holds
 * stay as they are, so from then on the database is the memory and the files are not read again.
 */
function adopted(folder: ClassFolder): string {
  const key = `${databaseKey()}\u0000${folder.kind}\u0000${folder.path}\u0000${folder.scope}`
  if (adoptedOn.has(key)) return folder.scope
  if (existsSync(folder.path)) {
    answer('browser_adopt_files', { scope: folder.scope, kind: folder.kind, path: folder.path, url: folder.url })
  }
  adoptedOn.add(key)
  return folder.scope
}

function call<T>(fn: () => T): T {
  try {
    return fn()
  } catch (error) {
    throw fromNative(error)
  }
}

/** The scope of a folder: its absolute path, or a digest of it when too long for a name. */
function scopeOf(folder: string): string {
  const absolute = path.resolve(folder)
  // eslint-disable-next-line no-control-regex
  if (Buffer.byteLength(absolute) <= 200 && !/[\u0000-\u001f\u007f]/.test(absolute)) return absolute
  return `path-sha256:${createHash('sha256').update(absolute).digest('hex')}`
}

/** A domain or url as the url the memory files it under. */
function siteUrl(domain: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(domain) ? domain : `https://${domain}/`
}

function checkText(value: unknown, name: string): asserts value is string {
  if (typeof value !== 'string' || !wellFormed(value)) {
    throw new InvalidInputError(`${name} must be a string of well-formed text`, name)
  }
}

/** `value` through JSON: what a file of it would hold (no `undefined`, no class instances). */
function plain<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T
}

/**
 * A lone UTF-16 surrogate as `JSON.stringify` escapes it (`\udXXX`), which is no text to the
 * contract. (A literal backslash before `udXXX` matches too; it only takes the other way.)
 */
const ESCAPED_SURROGATE = /\\ud[89a-f][0-9a-f]{2}/

/**
 * The answer of the contract's operation `name` on the database in use to `input`, as the
 * operation writes it. The input crosses as its JSON text (what a file of it would hold); one
 * that holds a lone surrogate crosses as an object instead, whose strings the addon converts
 * as it always has (the surrogate becoming U+FFFD).
 */
function answer(name: string, input: Record<string, unknown>): unknown {
  const text = JSON.stringify(input)
  const out = call(() =>
    ESCAPED_SURROGATE.test(text) ? database().callSync(name, JSON.parse(text)) : database().callJsonSync(name, text),
  )
  // The output comes as JSON text when parsing it makes the same value (see the addon).
  return typeof out === 'string' ? JSON.parse(out) : out
}

/** An answer that is a text for the prompt. */
interface TextAnswer {
  text: string
}

/** The answer of `browser_match` and `browser_replayable`. */
interface MatchAnswer {
  match?: { trajectory: Trajectory; similarity: number; score: number }
}

/** A fresh run id, `run_<ms>_<6 base36>`. */
function runId(): string {
  return (answer('browser_run_id', {}) as { run_id: string }).run_id
}

/** `value` when it is a number, else undefined (so the contract's default applies). */
function numberOrNothing(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined
}

/** Saved trajectories of runs, matched by goal similarity for reuse and replay. */
export class TrajectoryStore {
  readonly #folder: ClassFolder
  readonly #options: Required<TrajectoryStoreOptions>
  readonly #matching: { similarity_threshold?: number; ttl_days?: number; trace_scoring: boolean }

  constructor(storePath?: string, thresholdOrOptions: number | TrajectoryStoreOptions = 0.5) {
    const options: TrajectoryStoreOptions =
      typeof thresholdOrOptions === 'number' ? { similarityThreshold: thresholdOrOptions } : (thresholdOrOptions ?? {})
    const folder = path.resolve(storePath || path.join(process.cwd(), '.trajectories'))
    this.#folder = { scope: scopeOf(folder), kind: 'trajectories', path: folder }
    this.#options = {
      similarityThreshold: options.similarityThreshold ?? 0.5,
      enableScoring: options.enableScoring === true,
      ttlDays: options.ttlDays ?? 30,
    }
    // A number reaches the contract as it is; anything else is left out, so the contract's
    // default (the reference's) applies, as it always has.
    this.#matching = {
      similarity_threshold: numberOrNothing(this.#options.similarityThreshold),
      ttl_days: numberOrNothing(this.#options.ttlDays),
      trace_scoring: this.#options.enableScoring,
    }
  }

  /** The memory scope of the folder, its files adopted. */
  get #scope(): string {
    return adopted(this.#folder)
  }

  /** Saves a finished run (success or not); `complete` and `abort` actions are not steps. */
  save(goal: string, turns: Turn[], success: boolean, model: string, options: { origin?: string } = {}): Trajectory {
    checkText(goal, 'goal')
    if (!Array.isArray(turns)) throw new InvalidInputError('turns must be an array of turns', 'turns')
    const run = { scope: this.#scope, goal, turns, success: success === true, model: String(model ?? ''), origin: options.origin ?? '' }
    return answer('browser_save_trajectory', run) as Trajectory
  }

  /** Every saved trajectory, oldest first. */
  loadAll(): Trajectory[] {
    return (answer('browser_trajectories', { scope: this.#scope }) as { trajectories: Trajectory[] }).trajectories
  }

  /** The most similar successful trajectory for `goal` above the threshold, or null. */
  findBestMatch(goal: string, options: { origin?: string } = {}): Trajectory | null {
    checkText(goal, 'goal')
    const origin = typeof options.origin === 'string' && options.origin ? options.origin : undefined
    const found = answer('browser_match', { scope: this.#scope, goal, origin, ...this.#matching }) as MatchAnswer
    return found.match?.trajectory ?? null
  }

  /**
   * The trajectory to replay without a model (similarity at least `minSimilarity`, default
   * 0.85, same origin, at least one step) as `{trajectory, similarity, origin}`, or null.
   */
  findReplayCandidate(goal: string, options: { origin?: string; minSimilarity?: number } = {}): ReplayCandidate | null {
    checkText(goal, 'goal')
    const origin = options.origin ?? ''
    const input = { scope: this.#scope, goal, origin, ttl_days: this.#matching.ttl_days, min_similarity: numberOrNothing(options.minSimilarity) }
    const found = answer('browser_replayable', input) as MatchAnswer
    const match = found.match
    return match ? { origin: match.trajectory.origin ?? null, similarity: match.similarity, trajectory: match.trajectory } : null
  }

  /** The trajectory as a reference for the prompt: goal, then one line per step. */
  formatAsReference(trajectory: Trajectory): string {
    return (answer('browser_reference_text', { trajectory }) as TextAnswer).text
  }
}

/** What the agent learned about one site: facts with confidences. */
export class AppKnowledge {
  readonly #folder: ClassFolder
  readonly #url: string

  constructor(filePath: string, domain: string) {
    checkText(filePath, 'path')
    checkText(domain, 'domain')
    this.#url = siteUrl(domain)
    const file = path.resolve(filePath)
    this.#folder = { scope: scopeOf(path.dirname(file)), kind: 'knowledge', path: file, url: this.#url }
  }

  /** The memory scope of the file's folder, the file adopted. */
  get #scope(): string {
    return adopted(this.#folder)
  }

  /** Facts with confidence at least `minConfidence` (default 0.3). */
  getFacts(minConfidence = 0.3): Fact[] {
    const found = operation('browser_facts', { scope: this.#scope, url: this.#url, min_confidence: minConfidence }) as { facts: Fact[] }
    return found.facts
  }

  /** Facts of one type with confidence at least `minConfidence` (default 0.3). */
  getFactsByType(type: FactType, minConfidence = 0.3): Fact[] {
    return this.getFacts(minConfidence).filter((f) => f.type === type)
  }

  /** The first fact of this type and key, whatever its confidence. */
  getFact(type: FactType, key: string): Fact | undefined {
    return this.getFacts(0).find((f) => f.type === type && f.key === key)
  }

  /** Records one observation: a confirmation boosts, a contradiction decays. */
  recordFact(type: FactType, key: string, value: string): void {
    checkText(key, 'key')
    checkText(value, 'value')
    answer('browser_record_fact', { scope: this.#scope, url: this.#url, type: String(type), key, value })
  }

  /** Records several observations in order. */
  recordFacts(facts: Array<{ type: FactType; key: string; value: string }>): void {
    if (!Array.isArray(facts)) throw new InvalidInputError('facts must be an array', 'facts')
    for (const fact of facts) this.recordFact(fact.type, fact.key, fact.value)
  }

  /** The sessions of previous runs on the site, newest first. */
  getSessions(): Session[] {
    return (answer('browser_sessions', { scope: this.#scope, url: this.#url }) as { sessions: Session[] }).sessions
  }

  /** Appends a session; the newest five are kept. */
  recordSession(session: Session): void {
    if (session === null || typeof session !== 'object') throw new InvalidInputError('session must be an object', 'session')
    checkText(session.timestamp, 'session.timestamp')
    answer('browser_record_session', { scope: this.#scope, url: this.#url, session })
  }

  /** The `APP KNOWLEDGE` block for the prompt (facts of confidence 0.5 and up), or ''. */
  formatForBrain(): string {
    return (answer('browser_knowledge', { scope: this.#scope, url: this.#url }) as TextAnswer).text
  }

  /** Forgets every learned fact of the site; the session history stays. */
  clearPatterns(): void {
    answer('browser_forget_knowledge', { scope: this.#scope, url: this.#url, sessions: false })
  }

  /** Forgets the site's facts and sessions (its selectors are `SelectorCache`'s). */
  reset(): void {
    answer('browser_forget_knowledge', { scope: this.#scope, url: this.#url, sessions: true })
  }

  /** How many facts are stored, whatever their confidence. */
  get factCount(): number {
    return this.getFacts(0).length
  }

  /** Every write is already stored; kept for the reference's callers. */
  save(): void {}
}

/** Selectors that worked, by element, ranked by use. */
export class SelectorCache {
  readonly #folder: ClassFolder
  readonly #url: string

  constructor(filePath: string) {
    checkText(filePath, 'path')
    const file = path.resolve(filePath)
    this.#url = path.basename(path.dirname(file)) || 'selectors'
    this.#folder = { scope: scopeOf(path.dirname(file)), kind: 'selectors', path: file, url: this.#url }
  }

  /** The memory scope of the file's folder, the file adopted. */
  get #scope(): string {
    return adopted(this.#folder)
  }

  /** Records that `selector` (an `@ref` or a stable selector) worked for `element`. */
  recordSuccess(element: string, selector: string): void {
    checkText(element, 'element')
    checkText(selector, 'selector')
    answer('browser_record_selector', { scope: this.#scope, url: this.#url, element, selector })
  }

  /** The entry of `element`, or undefined. */
  lookup(element: string): SelectorEntry | undefined {
    return this.#entries().find((e) => e.element === element)
  }

  /** Every entry, most used first (ties in the order they were first recorded). */
  getAll(): SelectorEntry[] {
    return this.#entries()
      .map((entry, i): [SelectorEntry, number] => [entry, i])
      .sort((a, b) => b[0].successCount - a[0].successCount || a[1] - b[1])
      .map(([entry]) => entry)
  }

  /** The `KNOWN SELECTORS` block for the prompt with the `limit` most used, or ''. */
  formatForBrain(limit = 20): string {
    const top = this.getAll().slice(0, Math.max(0, limit))
    return (answer('browser_selectors_text', { selectors: top }) as TextAnswer).text
  }

  /** Every write is already stored; kept for the reference's callers. */
  save(): void {}

  #entries(): SelectorEntry[] {
    return (answer('browser_selectors', { scope: this.#scope, url: this.#url }) as { selectors: SelectorEntry[] }).selectors
  }
}

/**
 * The project's memory root: the reference's folder layout (root, `domains/<site>/`,
 * `runs/`), whose paths name each domain's memories (their scopes) and where callers may keep
 * files of their own, and the cross-domain hints, which live in the database.
 */
export class ProjectStore {
  readonly #root: string

  constructor(root?: string) {
    this.#root = root || path.join(process.cwd(), '.agent-memory')
    for (const folder of [this.#root, path.join(this.#root, 'domains'), path.join(this.#root, 'runs')]) {
      mkdirSync(folder, { recursive: true })
    }
  }

  /** The root given (or `.agent-memory` in the working folder). */
  getRoot(): string {
    return this.#root
  }

  /** The folder name of a url's domain, as the memory names the site (`localhost_5173`). */
  getDomainDir(url: string): string {
    checkText(url, 'url')
    const { site } = answer('browser_site_key', { url }) as { site: string }
    const folder = path.join(this.#root, 'domains', site.replace(/:/g, '_'))
    mkdirSync(folder, { recursive: true })
    return folder
  }

  /** Where the domain's trajectories are kept (a scope name for `TrajectoryStore`). */
  getTrajectoryDir(url: string): string {
    const folder = path.join(this.getDomainDir(url), 'trajectories')
    mkdirSync(folder, { recursive: true })
    return folder
  }

  /** The name `AppKnowledge` takes for the domain. */
  getKnowledgePath(url: string): string {
    return path.join(this.getDomainDir(url), 'knowledge.json')
  }

  /** The name `SelectorCache` takes for the domain. */
  getSelectorCachePath(url: string): string {
    return path.join(this.getDomainDir(url), 'selectors.json')
  }

  /** The name the reference kept its hints under. */
  getHintsPath(): string {
    return path.join(this.#root, 'hints.json')
  }

  /** Stores cross-domain optimization hints, replacing earlier ones. */
  saveHints(hints: string): void {
    checkText(hints, 'hints')
    answer('browser_save_hints', { scope: scopeOf(this.#root), hints })
  }

  /** The stored hints, or null. */
  loadHints(): string | null {
    return (answer('browser_hints', { scope: scopeOf(this.#root) }) as { hints: string }).hints || null
  }

  /**
   * Keeps a test suite's summary (model, counts, pass rate, averages, and per test its id,
   * name, verdict, turns and time) in the database, and writes it as `runs/<id>.json` in the
   * reference's layout (replaced atomically); returns its id, `run_<ms>_<base36>`.
   */
  saveRunSummary(suite: TestSuiteResult): string {
    if (suite === null || typeof suite !== 'object' || !Array.isArray(suite.results) || typeof suite.summary !== 'object') {
      throw new InvalidInputError('suite must be a test suite result with `results` and `summary`', 'suite')
    }
    const id = runId()
    const { summary } = suite
    const record = plain({
      id,
      model: suite.model,
      timestamp: suite.timestamp,
      total: summary.total,
      passed: summary.passed,
      failed: summary.failed,
      passRate: summary.passRate,
      avgTurns: summary.avgTurns,
      avgDurationMs: summary.avgDurationMs,
      totalDurationMs: summary.totalDurationMs,
      tests: suite.results.map((r) => ({
        id: r.testCase?.id,
        name: r.testCase?.name,
        verified: r.verified,
        turnsUsed: r.turnsUsed,
        durationMs: r.durationMs,
      })),
    })
    answer('browser_save_suite_summary', { scope: scopeOf(this.#root), summary: record })
    const file = path.join(this.#root, 'runs', `${id}.json`)
    const partial = `${file}.${process.pid}.tmp`
    writeFileSync(partial, JSON.stringify(record, null, 2))
    renameSync(partial, file)
    return id
  }

  /** The suite summaries kept for this root, oldest id first. */
  loadRunSummaries(): RunSummary[] {
    return (answer('browser_suite_summaries', { scope: scopeOf(this.#root) }) as { summaries: RunSummary[] }).summaries
  }
}

/** The action's `selector` as text, when the action names one. */
function selectorOf(action: unknown): string | undefined {
  return action !== null && typeof action === 'object' && 'selector' in action ? String(action.selector) : undefined
}

/** What identifies a repeated action: its kind and the target that makes it the same. */
function actionKey(taken: Turn['action'] | undefined): string {
  const action = taken as { action: string; [field: string]: unknown } | undefined
  switch (action?.action) {
    case 'click':
    case 'type':
      return `${action.action}:${String(action.selector)}`
    case 'press':
      return `press:${String(action.selector)}:${String(action.key)}`
    case 'scroll':
      return `scroll:${String(action.direction)}`
    case 'navigate':
      return `navigate:${String(action.url)}`
    default:
      return String(action?.action)
  }
}

/** A test's run as the browser memory's hints read it. */
interface EvaluatedRun {
  name: string
  goal: string
  turns: Turn[]
  agentSuccess: boolean
  verified: boolean
  verdict?: string
  failedCriteria?: string[]
  turnsUsed: number
  durationMs: number
}

const evaluated = new WeakMap<RunAnalysis, EvaluatedRun[]>()

/** Whether a turn failed: an error, or a verification that did not hold. */
function failed(turn: Turn): boolean {
  return Boolean(turn.error || turn.verificationFailure)
}

/** The failed criteria's details of a result, when it has criteria. */
function failedCriteria(result: TestResult): string[] | undefined {
  return result.criteriaResults?.filter((c) => !c.passed && c.detail).map((c) => c.detail as string)
}

/**
 * The analysis of a test suite's results: turn efficiency, verification gaps, action and
 * goal patterns, wasted turns and the top failure reasons; and the hints for the next runs.
 */
export class TrajectoryAnalyzer {
  /** The analysis of `suite` (skipped tests left out of every figure but `totalTests`). */
  analyze(suite: TestSuiteResult): RunAnalysis {
    if (suite === null || typeof suite !== 'object' || !Array.isArray(suite.results)) {
      throw new InvalidInputError('suite must be a test suite result with `results`', 'suite')
    }
    const results = suite.results.filter((r) => !r.skipped)
    const turnsOf = (r: TestResult): Turn[] => r.agentResult?.turns ?? []
    const wasted = (t: Turn): boolean => failed(t) || (t.action?.action === 'wait' && (t.action as { ms?: unknown }).ms === 0)

    const all = results.flatMap(turnsOf)
    const wastedTurns = all.filter(wasted).length
    const turnEfficiency = {
      totalTurns: all.length,
      productiveTurns: all.length - wastedTurns,
      wastedTurns,
      efficiencyRate: all.length > 0 ? (all.length - wastedTurns) / all.length : 1,
    }

    const says = results.filter((r) => r.agentSuccess).length
    const confirmed = results.filter((r) => r.agentSuccess && r.verified).length
    const verificationGaps = {
      agentSaysSuccess: says,
      groundTruthConfirms: confirmed,
      falsePositiveRate: says > 0 ? (says - confirmed) / says : 0,
    }

    const patterns = new Map<string, Omit<ActionPattern, 'failureRate'>>()
    for (const turn of all) {
      const selector = selectorOf(turn.action)
      const key = `${turn.action?.action}:${selector || '*'}`
      const pattern = patterns.get(key) ?? { action: String(turn.action?.action), selector, occurrences: 0, failures: 0 }
      pattern.occurrences += 1
      pattern.failures += failed(turn) ? 1 : 0
      patterns.set(key, pattern)
    }
    const actionPatterns: ActionPattern[] = [...patterns.values()]
      .map((p) => ({ ...p, failureRate: p.failures / p.occurrences }))
      .sort((a, b) => b.occurrences - a.occurrences)

    interface GoalTally {
      goalPrefix: string
      attempts: number
      successes: number
      turns: number
      duration: number
      commonFailures: string[]
    }
    const goals = new Map<string, GoalTally>()
    for (const r of results) {
      const prefix = String(r.testCase?.goal ?? '').split('\n')[0].slice(0, 80)
      const goal = goals.get(prefix) ?? { goalPrefix: prefix, attempts: 0, successes: 0, turns: 0, duration: 0, commonFailures: [] }
      goal.attempts += 1
      goal.successes += r.verified ? 1 : 0
      goal.turns += r.turnsUsed
      goal.duration += r.durationMs
      if (!r.verified && r.verdict) goal.commonFailures.push(r.verdict)
      goals.set(prefix, goal)
    }
    const goalPatterns: GoalPattern[] = [...goals.values()].map((g) => ({
      goalPrefix: g.goalPrefix,
      attempts: g.attempts,
      successes: g.successes,
      avgTurns: g.turns / g.attempts,
      avgDurationMs: g.duration / g.attempts,
      commonFailures: g.commonFailures,
    }))

    const wasteBreakdown: TurnWaste[] = []
    for (const r of results) {
      const turns = turnsOf(r)
      const name = r.testCase?.name
      const numbers = (t: Turn): number => t.turn as number
      const stale = turns.filter((t) => t.error?.includes('Stale ref')).map(numbers)
      if (stale.length > 0) {
        wasteBreakdown.push({ category: 'stale-ref', turnNumbers: stale, description: `${name}: ${stale.length} stale ref errors` })
      }
      for (let i = 2; i < turns.length; i++) {
        const key = actionKey(turns[i].action)
        if (actionKey(turns[i - 2].action) === key && actionKey(turns[i - 1].action) === key) {
          const repeated = [turns[i - 2], turns[i - 1], turns[i]].map(numbers)
          wasteBreakdown.push({
            category: 'stuck-loop',
            turnNumbers: repeated,
            description: `${name}: repeated "${key}" at turns ${repeated[0]}-${repeated[2]}`,
          })
        }
      }
      const errors = turns.filter((t) => t.error && !t.error.includes('Stale ref')).map(numbers)
      if (errors.length > 0) {
        wasteBreakdown.push({ category: 'error', turnNumbers: errors, description: `${name}: ${errors.length} execution errors` })
      }
    }

    const reasons = new Map<string, number>()
    for (const r of results.filter((r) => !r.verified)) {
      const found = failedCriteria(r) ?? (r.verdict ? [r.verdict] : [])
      for (const reason of found) reasons.set(reason, (reasons.get(reason) ?? 0) + 1)
    }
    const topFailureReasons = [...reasons.entries()].sort((a, b) => b[1] - a[1]).map(([reason]) => reason)

    const analysis: RunAnalysis = {
      timestamp: new Date().toISOString(),
      suiteModel: suite.model,
      totalTests: suite.results.length,
      passRate: suite.summary?.passRate,
      turnEfficiency,
      verificationGaps,
      actionPatterns,
      goalPatterns,
      wasteBreakdown,
      topFailureReasons,
    }
    evaluated.set(
      analysis,
      plain(
        results.map((r) => ({
          name: r.testCase?.name ?? '',
          goal: r.testCase?.goal ?? '',
          turns: turnsOf(r),
          agentSuccess: r.agentSuccess === true,
          verified: r.verified === true,
          verdict: r.verdict,
          failedCriteria: failedCriteria(r),
          turnsUsed: r.turnsUsed,
          durationMs: r.durationMs,
        })),
      ),
    )
    return analysis
  }

  /**
   * The `FEEDBACK FROM PREVIOUS RUNS:` block for the prompt, or '' when nothing stands out:
   * the browser memory's hints over the runs `analysis` was made from.
   */
  generateHints(analysis: RunAnalysis): string {
    const runs = evaluated.get(analysis)
    if (!runs) throw new InvalidInputError('analysis must be one this analyzer returned from analyze()', 'analysis')
    return (answer('browser_suite_hints', { runs }) as TextAnswer).text
  }
}

/** `{run_id: ...}` as `{runId: ...}`, recursively over plain objects. */
function camel(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(camel)
  if (value === null || typeof value !== 'object') return value
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value)) {
    if (item === null) continue
    out[key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())] = camel(item)
  }
  return out
}

/** `{runId: ...}` as `{run_id: ...}` (top level), leaving out undefined fields. */
function snake(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(value ?? {})) {
    if (item !== undefined) out[key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = item
  }
  return out
}

/** The contract's operation `name` on the database in use, its result in camelCase. */
function operation(name: string, input: Record<string, unknown>): unknown {
  return camel(answer(name, input))
}

/** `fn()`, or undefined when it names a run that does not exist. */
function unlessMissing<T>(fn: () => T): T | undefined {
  try {
    return fn()
  } catch (error) {
    if ((error as { kind?: unknown } | null)?.kind === 'not_found') return undefined
    throw error
  }
}

/**
 * The run registry: manifests of runs (start, update, complete, get, list), and the scenarios
 * that resume or fork one. Runs of one memory folder share a scope.
 */
export class RunRegistry {
  readonly #folder: ClassFolder

  constructor(memoryDir: string) {
    checkText(memoryDir, 'memoryDir')
    const folder = path.resolve(memoryDir, 'agent-runs')
    this.#folder = { scope: scopeOf(folder), kind: 'runs', path: folder }
  }

  /** The memory scope of the `agent-runs/` folder, its manifests adopted. */
  get #scope(): string {
    return adopted(this.#folder)
  }

  /** Registers a run as running; returns its id. */
  startRun(opts: { runId: string; sessionId?: string; parentRunId?: string; goal: string; domain: string; startUrl?: string }): string {
    const { runId, sessionId, parentRunId, goal, domain, startUrl } = opts ?? {}
    operation('browser_run_start', snake({ runId, sessionId, parentRunId, goal, domain, startUrl, scope: this.#scope }))
    return runId
  }

  /**
   * Updates a run: any field of its manifest but its id and start time (`updatedAt` becomes
   * now); a field left out stays as it is. Undefined for an unknown run.
   */
  updateRun(runId: string, updates: Partial<Omit<RunManifest, 'runId' | 'startedAt'>> = {}): RunManifest | undefined {
    const { sessionId, parentRunId, status, goal, domain, startUrl, finalUrl, currentUrl, completedAt, success, summary } = updates ?? {}
    const { artifactPaths, turnCount, result, reason } = updates ?? {}
    const changes = { sessionId, parentRunId, status, goal, domain, startUrl, finalUrl, currentUrl, completedAt, success, summary }
    const input = snake({ runId, ...changes, artifactPaths, turnCount, result, reason, scope: this.#scope })
    return unlessMissing(() => operation('browser_run_update', input) as RunManifest)
  }

  /** Completes a run (`completed` on success, else `failed`); undefined for an unknown run. */
  completeRun(
    runId: string,
    result: { success: boolean; finalUrl?: string; summary?: string; result?: string; reason?: string; turnCount: number; artifactPaths?: string[] },
  ): RunManifest | undefined {
    const { success, finalUrl, summary, result: text, reason, turnCount, artifactPaths } = result ?? {}
    return unlessMissing(
      () =>
        operation(
          'browser_run_complete',
          snake({ runId, success, finalUrl, summary, result: text, reason, turnCount, artifactPaths, scope: this.#scope }),
        ) as RunManifest,
    )
  }

  /** The manifest of a run, or undefined. */
  getRun(runId: string): RunManifest | undefined {
    return this.listRuns().find((run) => run.runId === runId)
  }

  /** Manifests, newest first, filtered by domain, session and status, at most `limit`. */
  listRuns(filters: RunFilters = {}): RunManifest[] {
    const { domain, sessionId, status, limit } = filters
    const found = operation('browser_runs', snake({ domain, sessionId, status, limit, scope: this.#scope })) as { runs: RunManifest[] }
    return found.runs
  }

  /** The scenario that continues a run in its session; undefined for an unknown run. */
  buildResumeScenario(runId: string, newGoal?: string): Scenario | undefined {
    return unlessMissing(() => operation('browser_resume', snake({ runId, goal: newGoal, scope: this.#scope })) as Scenario)
  }

  /** The scenario that branches a run into a new session; undefined for an unknown run. */
  buildForkScenario(runId: string, goal: string): Scenario | undefined {
    return unlessMissing(() => operation('browser_fork', snake({ runId, goal, scope: this.#scope })) as Scenario)
  }

  /** A fresh run id, `run_<ms>_<6 base36>`. */
  static generateRunId(): string {
    return runId()
  }
}

/**
 * The context budget: parts with priorities, assembled highest first within 8,000 characters
 * (UTF-16 units, as JavaScript counts them), stopping at the first part that overflows and
 * cutting it when more than 200 remain, as the reference does.
 */
export class ContextBudget {
  readonly #parts: Array<{ label: string; content: string; priority: number }> = []

  /** Adds a part of the context; an empty one is left out, as the reference leaves it. */
  add(label: string, content: string, priority: number): void {
    checkText(label, 'label')
    checkText(content, 'content')
    if (typeof priority !== 'number' || !Number.isFinite(priority)) {
      throw new InvalidInputError('priority must be a finite number', 'priority')
    }
    if (content === '') return
    this.#parts.push({ label, content, priority })
  }

  /** Whether no part has been added (empty ones do not count). */
  get isEmpty(): boolean {
    return this.#parts.length === 0
  }

  /** The assembled context. */
  build(): string {
    return (answer('browser_build_context', { parts: this.#parts, budget: 8000, policy: 'stop' }) as TextAnswer).text
  }
}
