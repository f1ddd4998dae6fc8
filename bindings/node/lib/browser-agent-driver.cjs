'use strict'
// A drop-in for browser-agent-driver's memory classes (`TrajectoryStore`, `AppKnowledge`,
// `SelectorCache`, `ProjectStore`): the same names, constructor arguments, methods and
// results, backed by one agent-memory database instead of JSON files.
//
// The database is the one given to `useDatabase(db)`, else `$AGENT_MEMORY_DB`, else
// `agent-memory.db` in the working folder (as the `agent-memory` command line). The paths the
// classes are constructed with keep memories apart as they kept files apart: each folder is a
// memory scope of its own (named by its absolute path), so two stores on one folder share
// their memory and stores on two folders never see each other's. Every write is durable when
// the call returns, so `save()` has nothing left to do. The rules (matching, confidence,
// pruning, ranking, rendering) are the browser memory's own, in the native addon.
//
// `TrajectoryAnalyzer` reads a test suite's results, which live with the caller: its analysis
// is computed here, its hints by the browser memory's own rules in the addon.

const native = require('../native.js')
const { createHash } = require('node:crypto')
const { mkdirSync, renameSync, writeFileSync } = require('node:fs')
const path = require('node:path')
const { InvalidInputError, fromNative, wellFormed } = require('./errors.cjs')

let chosen
let frozen
const open = new Map()

/**
 * Makes the drop-in classes use `db` (a SQLite path, `":memory:"` or a postgres:// URL);
 * `options.now` (a `Date`, an RFC 3339 time or milliseconds) fixes "now" for every call, as
 * `Store.open`'s option does.
 */
function useDatabase(db, options = {}) {
  if (typeof db !== 'string' || db.length === 0) {
    throw new InvalidInputError('db must be a SQLite file path, ":memory:" or a postgres:// URL', 'db')
  }
  const now = options?.now
  const ms = now === undefined || now === null ? undefined : now instanceof Date ? now.getTime() : typeof now === 'string' ? Date.parse(now) : now
  if (ms !== undefined && !Number.isSafeInteger(ms)) {
    throw new InvalidInputError('options.now must be a Date, an RFC 3339 time or milliseconds since the epoch', 'options.now')
  }
  chosen = db
  frozen = ms
}

/** The native store of the database in use, opened once per process (and per frozen clock). */
function database() {
  const db = chosen ?? process.env.AGENT_MEMORY_DB ?? path.join(process.cwd(), 'agent-memory.db')
  const key = `${frozen ?? ''}\u0000${db}`
  let store = open.get(key)
  if (!store) {
    store = call(() => native.NativeStore.openSync(db, frozen))
    open.set(key, store)
  }
  return store
}

function call(fn) {
  try {
    return fn()
  } catch (error) {
    throw fromNative(error)
  }
}

/** The scope of a folder: its absolute path, or a digest of it when too long for a name. */
function scopeOf(folder) {
  const absolute = path.resolve(folder)
  if (Buffer.byteLength(absolute) <= 200 && !/[\u0000-\u001f\u007f]/.test(absolute)) return absolute
  return `path-sha256:${createHash('sha256').update(absolute).digest('hex')}`
}

/** A domain or url as the url the memory files it under. */
function siteUrl(domain) {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(domain) ? domain : `https://${domain}/`
}

function checkText(value, name) {
  if (typeof value !== 'string' || !wellFormed(value)) {
    throw new InvalidInputError(`${name} must be a string of well-formed text`, name)
  }
}

/** Saved trajectories of runs, matched by goal similarity for reuse and replay. */
class TrajectoryStore {
  #scope
  #options
  #finite

  constructor(storePath, thresholdOrOptions = 0.5) {
    const options = typeof thresholdOrOptions === 'number' ? { similarityThreshold: thresholdOrOptions } : thresholdOrOptions ?? {}
    this.#scope = scopeOf(storePath || path.join(process.cwd(), '.trajectories'))
    this.#options = {
      similarityThreshold: options.similarityThreshold ?? 0.5,
      enableScoring: options.enableScoring === true,
      ttlDays: options.ttlDays ?? 30,
    }
    // Finite numbers reach the addon as they are; anything else goes as the options object,
    // which the addon converts and judges as it always has.
    this.#finite = Number.isFinite(this.#options.similarityThreshold) && Number.isFinite(this.#options.ttlDays)
  }

  /** Saves a finished run (success or not); `complete` and `abort` actions are not steps. */
  save(goal, turns, success, model, options = {}) {
    checkText(goal, 'goal')
    if (!Array.isArray(turns)) throw new InvalidInputError('turns must be an array of turns', 'turns')
    const run = { goal, turns: JSON.parse(JSON.stringify(turns)), success: success === true, model: String(model ?? ''), origin: options.origin ?? '' }
    return call(() => database().browserSaveSync(this.#scope, run))
  }

  /** Every saved trajectory, oldest first. */
  loadAll() {
    return call(() => database().browserTrajectoriesSync(this.#scope))
  }

  /** The most similar successful trajectory for `goal` above the threshold, or null. */
  findBestMatch(goal, options = {}) {
    checkText(goal, 'goal')
    const origin = options.origin
    if (this.#finite && (!origin || typeof origin === 'string')) {
      const { similarityThreshold, ttlDays, enableScoring } = this.#options
      const found = call(() => database().browserMatchTextSync(this.#scope, goal, origin || undefined, similarityThreshold, ttlDays, enableScoring))
      // The match comes as JSON text when parsing it makes the same object (see the addon).
      return typeof found === 'string' ? JSON.parse(found) : found ?? null
    }
    const query = { ...this.#options }
    if (options.origin) query.origin = options.origin
    return call(() => database().browserMatchSync(this.#scope, goal, query)) ?? null
  }

  /**
   * The trajectory to replay without a model (similarity at least 0.85, same origin, at least
   * one step) as `{trajectory, similarity, origin}`, or null.
   */
  findReplayCandidate(goal, options = {}) {
    checkText(goal, 'goal')
    const origin = options.origin ?? ''
    return call(() => database().browserReplayableSync(this.#scope, goal, origin, { ttlDays: this.#options.ttlDays })) ?? null
  }

  /** The trajectory as a reference for the prompt: goal, then one line per step. */
  formatAsReference(trajectory) {
    return call(() => native.referenceText(JSON.parse(JSON.stringify(trajectory))))
  }
}

/** What the agent learned about one site: facts with confidences. */
class AppKnowledge {
  #scope
  #url

  constructor(filePath, domain) {
    checkText(filePath, 'path')
    checkText(domain, 'domain')
    this.#scope = scopeOf(path.dirname(filePath))
    this.#url = siteUrl(domain)
  }

  /** Facts with confidence at least `minConfidence` (default 0.3). */
  getFacts(minConfidence = 0.3) {
    return call(() => database().browserFactsSync(this.#scope, this.#url, minConfidence))
  }

  /** Facts of one type with confidence at least `minConfidence` (default 0.3). */
  getFactsByType(type, minConfidence = 0.3) {
    return this.getFacts(minConfidence).filter((f) => f.type === type)
  }

  /** The first fact of this type and key, whatever its confidence. */
  getFact(type, key) {
    return this.getFacts(0).find((f) => f.type === type && f.key === key)
  }

  /** Records one observation: a confirmation boosts, a contradiction decays. */
  recordFact(type, key, value) {
    checkText(key, 'key')
    checkText(value, 'value')
    call(() => database().browserRecordFactSync(this.#scope, this.#url, String(type), key, value))
  }

  /** Records several observations in order. */
  recordFacts(facts) {
    if (!Array.isArray(facts)) throw new InvalidInputError('facts must be an array', 'facts')
    for (const fact of facts) this.recordFact(fact.type, fact.key, fact.value)
  }

  /** The sessions of previous runs on the site, newest first. */
  getSessions() {
    return call(() => database().browserSessionsSync(this.#scope, this.#url))
  }

  /** Appends a session; the newest five are kept. */
  recordSession(session) {
    if (session === null || typeof session !== 'object') throw new InvalidInputError('session must be an object', 'session')
    checkText(session.timestamp, 'session.timestamp')
    call(() => database().browserRecordSessionSync(this.#scope, this.#url, JSON.parse(JSON.stringify(session))))
  }

  /** The `APP KNOWLEDGE` block for the prompt (facts of confidence 0.5 and up), or ''. */
  formatForBrain() {
    return call(() => database().browserKnowledgeTextSync(this.#scope, this.#url))
  }

  /** Forgets every learned fact of the site; the session history stays. */
  clearPatterns() {
    call(() => database().browserForgetKnowledgeSync(this.#scope, this.#url, false))
  }

  /** Forgets the site's facts and sessions (its selectors are `SelectorCache`'s). */
  reset() {
    call(() => database().browserForgetKnowledgeSync(this.#scope, this.#url, true))
  }

  /** How many facts are stored, whatever their confidence. */
  get factCount() {
    return this.getFacts(0).length
  }

  /** Every write is already stored; kept for the reference's callers. */
  save() {}
}

/** Selectors that worked, by element, ranked by use. */
class SelectorCache {
  #scope
  #url

  constructor(filePath) {
    checkText(filePath, 'path')
    this.#scope = scopeOf(path.dirname(filePath))
    this.#url = path.basename(path.dirname(path.resolve(filePath))) || 'selectors'
  }

  /** Records that `selector` (an `@ref` or a stable selector) worked for `element`. */
  recordSuccess(element, selector) {
    checkText(element, 'element')
    checkText(selector, 'selector')
    call(() => database().browserRecordSelectorSync(this.#scope, this.#url, element, selector))
  }

  /** The entry of `element`, or undefined. */
  lookup(element) {
    return this.#entries().find((e) => e.element === element)
  }

  /** Every entry, most used first (ties in the order they were first recorded). */
  getAll() {
    return this.#entries()
      .map((entry, i) => [entry, i])
      .sort((a, b) => b[0].successCount - a[0].successCount || a[1] - b[1])
      .map(([entry]) => entry)
  }

  /** The `KNOWN SELECTORS` block for the prompt with the `limit` most used, or ''. */
  formatForBrain(limit = 20) {
    const top = this.getAll().slice(0, Math.max(0, limit))
    return call(() => database().browserSelectorsTextSync(top))
  }

  /** Every write is already stored; kept for the reference's callers. */
  save() {}

  #entries() {
    return call(() => database().browserSelectorsSync(this.#scope, this.#url))
  }
}

/**
 * The project's memory root: the reference's folder layout (root, `domains/<site>/`,
 * `runs/`), whose paths name each domain's memories (their scopes) and where callers may keep
 * files of their own, and the cross-domain hints, which live in the database.
 */
class ProjectStore {
  #root

  constructor(root) {
    this.#root = root || path.join(process.cwd(), '.agent-memory')
    for (const folder of [this.#root, path.join(this.#root, 'domains'), path.join(this.#root, 'runs')]) {
      mkdirSync(folder, { recursive: true })
    }
  }

  /** The root given (or `.agent-memory` in the working folder). */
  getRoot() {
    return this.#root
  }

  /** The folder name of a url's domain, as the memory names the site (`localhost_5173`). */
  getDomainDir(url) {
    checkText(url, 'url')
    const folder = path.join(this.#root, 'domains', native.siteKeyOf(url).replace(/:/g, '_'))
    mkdirSync(folder, { recursive: true })
    return folder
  }

  /** Where the domain's trajectories are kept (a scope name for `TrajectoryStore`). */
  getTrajectoryDir(url) {
    const folder = path.join(this.getDomainDir(url), 'trajectories')
    mkdirSync(folder, { recursive: true })
    return folder
  }

  /** The name `AppKnowledge` takes for the domain. */
  getKnowledgePath(url) {
    return path.join(this.getDomainDir(url), 'knowledge.json')
  }

  /** The name `SelectorCache` takes for the domain. */
  getSelectorCachePath(url) {
    return path.join(this.getDomainDir(url), 'selectors.json')
  }

  /** The name the reference kept its hints under. */
  getHintsPath() {
    return path.join(this.#root, 'hints.json')
  }

  /** Stores cross-domain optimization hints, replacing earlier ones. */
  saveHints(hints) {
    checkText(hints, 'hints')
    call(() => database().browserSaveHintsSync(scopeOf(this.#root), hints))
  }

  /** The stored hints, or null. */
  loadHints() {
    return call(() => database().browserHintsSync(scopeOf(this.#root))) || null
  }

  /**
   * Keeps a test suite's summary (model, counts, pass rate, averages, and per test its id,
   * name, verdict, turns and time) in the database, and writes it as `runs/<id>.json` in the
   * reference's layout (replaced atomically); returns its id, `run_<ms>_<base36>`.
   */
  saveRunSummary(suite) {
    if (suite === null || typeof suite !== 'object' || !Array.isArray(suite.results) || typeof suite.summary !== 'object') {
      throw new InvalidInputError('suite must be a test suite result with `results` and `summary`', 'suite')
    }
    const id = native.generateRunId()
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
    call(() => database().browserSaveSuiteSummarySync(scopeOf(this.#root), record))
    const file = path.join(this.#root, 'runs', `${id}.json`)
    const partial = `${file}.${process.pid}.tmp`
    writeFileSync(partial, JSON.stringify(record, null, 2))
    renameSync(partial, file)
    return id
  }

  /** The suite summaries kept for this root, oldest id first. */
  loadRunSummaries() {
    return call(() => database().browserSuiteSummariesSync(scopeOf(this.#root)))
  }
}

/** `value` through JSON: what a file of it would hold (no `undefined`, no class instances). */
function plain(value) {
  return JSON.parse(JSON.stringify(value))
}

/** The action's `selector` as text, when the action names one. */
function selectorOf(action) {
  return action !== null && typeof action === 'object' && 'selector' in action ? String(action.selector) : undefined
}

/** What identifies a repeated action: its kind and the target that makes it the same. */
function actionKey(action) {
  switch (action?.action) {
    case 'click':
    case 'type':
      return `${action.action}:${action.selector}`
    case 'press':
      return `press:${action.selector}:${action.key}`
    case 'scroll':
      return `scroll:${action.direction}`
    case 'navigate':
      return `navigate:${action.url}`
    default:
      return String(action?.action)
  }
}

const evaluated = new WeakMap()

/**
 * The analysis of a test suite's results: turn efficiency, verification gaps, action and
 * goal patterns, wasted turns and the top failure reasons; and the hints for the next runs.
 */
class TrajectoryAnalyzer {
  /** The analysis of `suite` (skipped tests left out of every figure but `totalTests`). */
  analyze(suite) {
    if (suite === null || typeof suite !== 'object' || !Array.isArray(suite.results)) {
      throw new InvalidInputError('suite must be a test suite result with `results`', 'suite')
    }
    const results = suite.results.filter((r) => !r.skipped)
    const turnsOf = (r) => r.agentResult?.turns ?? []
    const failed = (t) => Boolean(t.error || t.verificationFailure)
    const wasted = (t) => failed(t) || (t.action?.action === 'wait' && t.action.ms === 0)

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

    const patterns = new Map()
    for (const turn of all) {
      const selector = selectorOf(turn.action)
      const key = `${turn.action?.action}:${selector || '*'}`
      const pattern = patterns.get(key) ?? { action: String(turn.action?.action), selector, occurrences: 0, failures: 0 }
      pattern.occurrences += 1
      pattern.failures += failed(turn) ? 1 : 0
      patterns.set(key, pattern)
    }
    const actionPatterns = [...patterns.values()]
      .map((p) => ({ ...p, failureRate: p.failures / p.occurrences }))
      .sort((a, b) => b.occurrences - a.occurrences)

    const goals = new Map()
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
    const goalPatterns = [...goals.values()].map((g) => ({
      goalPrefix: g.goalPrefix,
      attempts: g.attempts,
      successes: g.successes,
      avgTurns: g.turns / g.attempts,
      avgDurationMs: g.duration / g.attempts,
      commonFailures: g.commonFailures,
    }))

    const wasteBreakdown = []
    for (const r of results) {
      const turns = turnsOf(r)
      const name = r.testCase?.name
      const stale = turns.filter((t) => t.error?.includes('Stale ref')).map((t) => t.turn)
      if (stale.length > 0) {
        wasteBreakdown.push({ category: 'stale-ref', turnNumbers: stale, description: `${name}: ${stale.length} stale ref errors` })
      }
      for (let i = 2; i < turns.length; i++) {
        const key = actionKey(turns[i].action)
        if (actionKey(turns[i - 2].action) === key && actionKey(turns[i - 1].action) === key) {
          const numbers = [turns[i - 2].turn, turns[i - 1].turn, turns[i].turn]
          wasteBreakdown.push({ category: 'stuck-loop', turnNumbers: numbers, description: `${name}: repeated "${key}" at turns ${numbers[0]}-${numbers[2]}` })
        }
      }
      const errors = turns.filter((t) => t.error && !t.error.includes('Stale ref')).map((t) => t.turn)
      if (errors.length > 0) {
        wasteBreakdown.push({ category: 'error', turnNumbers: errors, description: `${name}: ${errors.length} execution errors` })
      }
    }

    const reasons = new Map()
    for (const r of results.filter((r) => !r.verified)) {
      const found = r.criteriaResults ? r.criteriaResults.filter((c) => !c.passed && c.detail).map((c) => c.detail) : r.verdict ? [r.verdict] : []
      for (const reason of found) reasons.set(reason, (reasons.get(reason) ?? 0) + 1)
    }
    const topFailureReasons = [...reasons.entries()].sort((a, b) => b[1] - a[1]).map(([reason]) => reason)

    const analysis = {
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
          failedCriteria: r.criteriaResults ? r.criteriaResults.filter((c) => !c.passed && c.detail).map((c) => c.detail) : undefined,
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
  generateHints(analysis) {
    const runs = evaluated.get(analysis)
    if (!runs) throw new InvalidInputError('analysis must be one this analyzer returned from analyze()', 'analysis')
    return call(() => native.suiteHints(runs))
  }
}

/** `{run_id: ...}` as `{runId: ...}`, recursively over plain objects. */
function camel(value) {
  if (Array.isArray(value)) return value.map(camel)
  if (value === null || typeof value !== 'object') return value
  const out = {}
  for (const [key, item] of Object.entries(value)) {
    if (item === null) continue
    out[key.replace(/_([a-z])/g, (_, c) => c.toUpperCase())] = camel(item)
  }
  return out
}

/** `{runId: ...}` as `{run_id: ...}` (top level), leaving out undefined fields. */
function snake(value) {
  const out = {}
  for (const [key, item] of Object.entries(value ?? {})) {
    if (item !== undefined) out[key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = item
  }
  return out
}

/** The contract's operation `name` on the database in use, its result in camelCase. */
function operation(name, input) {
  return camel(call(() => database().callSync(name, input)))
}

/** `fn()`, or undefined when it names a run that does not exist. */
function unlessMissing(fn) {
  try {
    return fn()
  } catch (error) {
    if (error.kind === 'not_found') return undefined
    throw error
  }
}

/**
 * The run registry: manifests of runs (start, update, complete, get, list), and the scenarios
 * that resume or fork one. Runs of one memory folder share a scope.
 */
class RunRegistry {
  #scope

  constructor(memoryDir) {
    checkText(memoryDir, 'memoryDir')
    this.#scope = scopeOf(path.join(memoryDir, 'agent-runs'))
  }

  /** Registers a run as running; returns its id. */
  startRun(opts) {
    const { runId, sessionId, parentRunId, goal, domain, startUrl } = opts ?? {}
    operation('browser_run_start', snake({ runId, sessionId, parentRunId, goal, domain, startUrl, scope: this.#scope }))
    return runId
  }

  /** Updates a running run (status, current url, turns, artifacts); undefined for an unknown run. */
  updateRun(runId, updates = {}) {
    const { status, currentUrl, turnCount, artifactPaths } = updates
    return unlessMissing(() =>
      operation('browser_run_update', snake({ runId, status, currentUrl, turnCount, artifactPaths, scope: this.#scope })),
    )
  }

  /** Completes a run (`completed` on success, else `failed`); undefined for an unknown run. */
  completeRun(runId, result) {
    const { success, finalUrl, summary, result: text, reason, turnCount, artifactPaths } = result ?? {}
    return unlessMissing(() =>
      operation(
        'browser_run_complete',
        snake({ runId, success, finalUrl, summary, result: text, reason, turnCount, artifactPaths, scope: this.#scope }),
      ),
    )
  }

  /** The manifest of a run, or undefined. */
  getRun(runId) {
    return this.listRuns().find((run) => run.runId === runId)
  }

  /** Manifests, newest first, filtered by domain, session and status, at most `limit`. */
  listRuns(filters = {}) {
    const { domain, sessionId, status, limit } = filters
    return operation('browser_runs', snake({ domain, sessionId, status, limit, scope: this.#scope })).runs
  }

  /** The scenario that continues a run in its session; undefined for an unknown run. */
  buildResumeScenario(runId, newGoal) {
    return unlessMissing(() => operation('browser_resume', snake({ runId, goal: newGoal, scope: this.#scope })))
  }

  /** The scenario that branches a run into a new session; undefined for an unknown run. */
  buildForkScenario(runId, goal) {
    return unlessMissing(() => operation('browser_fork', snake({ runId, goal, scope: this.#scope })))
  }

  /** A fresh run id, `run_<ms>_<6 base36>`. */
  static generateRunId() {
    return native.generateRunId()
  }
}

/**
 * The context budget: parts with priorities, assembled highest first within 8,000 characters
 * (UTF-16 units, as JavaScript counts them), stopping at the first part that overflows and
 * cutting it when more than 200 remain, as the reference does.
 */
class ContextBudget {
  #parts = []

  /** Adds a part of the context. */
  add(label, content, priority) {
    checkText(label, 'label')
    checkText(content, 'content')
    if (!Number.isInteger(priority)) throw new InvalidInputError('priority must be an integer', 'priority')
    this.#parts.push({ label, content, priority })
  }

  /** The assembled context. */
  build() {
    return call(() => native.buildContext(this.#parts, 8000, 'stop'))
  }
}

module.exports = { TrajectoryStore, TrajectoryAnalyzer, AppKnowledge, SelectorCache, ProjectStore, RunRegistry, ContextBudget, useDatabase }
