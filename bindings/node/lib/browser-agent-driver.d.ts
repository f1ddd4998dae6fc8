// Declarations of the browser-agent-driver drop-in: the reference's names and shapes.

/** A turn of a run, as the agent reports it. */
export interface Turn {
  turn?: number
  state: { url: string; title?: string; snapshot?: string }
  action: { action: string; [field: string]: unknown }
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

export interface TrajectoryStoreOptions {
  similarityThreshold?: number
  enableScoring?: boolean
  ttlDays?: number
}

export interface ReplayCandidate {
  trajectory: Trajectory
  similarity: number
  origin: string | null
}

export declare class TrajectoryStore {
  constructor(storePath?: string, thresholdOrOptions?: number | TrajectoryStoreOptions)
  save(goal: string, turns: Turn[], success: boolean, model: string, options?: { origin?: string }): Trajectory
  loadAll(): Trajectory[]
  findBestMatch(goal: string, options?: { origin?: string }): Trajectory | null
  findReplayCandidate(goal: string, options?: { origin?: string }): ReplayCandidate | null
  formatAsReference(trajectory: Trajectory): string
}

export type FactType = 'timing' | 'selector' | 'pattern' | 'quirk'

export interface Fact {
  type: FactType
  key: string
  value: string
  confidence: number
  sources: number
  lastSeen: string
}

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

export declare class AppKnowledge {
  constructor(path: string, domain: string)
  getFacts(minConfidence?: number): Fact[]
  getFactsByType(type: FactType, minConfidence?: number): Fact[]
  getFact(type: FactType, key: string): Fact | undefined
  recordFact(type: FactType, key: string, value: string): void
  recordFacts(facts: Array<{ type: FactType; key: string; value: string }>): void
  getSessions(): Session[]
  recordSession(session: Session): void
  formatForBrain(): string
  /** Forgets every learned fact of the site; the session history stays. */
  clearPatterns(): void
  /** Forgets the site's facts and sessions. */
  reset(): void
  /** How many facts are stored, whatever their confidence. */
  readonly factCount: number
  save(): void
}

export interface SelectorEntry {
  element: string
  lastRef?: string
  stableSelector?: string
  successCount: number
  lastUsed: string
}

export declare class SelectorCache {
  constructor(path: string)
  recordSuccess(element: string, selector: string): void
  lookup(element: string): SelectorEntry | undefined
  getAll(): SelectorEntry[]
  formatForBrain(limit?: number): string
  save(): void
}

export declare class ProjectStore {
  constructor(root?: string)
  getRoot(): string
  getDomainDir(url: string): string
  getTrajectoryDir(url: string): string
  getKnowledgePath(url: string): string
  getSelectorCachePath(url: string): string
  getHintsPath(): string
  saveHints(hints: string): void
  loadHints(): string | null
  /** Keeps the suite's summary in the database and writes `runs/<id>.json`; returns the id. */
  saveRunSummary(suite: TestSuiteResult): string
  /** The suite summaries kept for this root, oldest id first. */
  loadRunSummaries(): RunSummary[]
}

/** A test case's result, as browser-agent-driver's test runner reports it (the fields read here). */
export interface TestResult {
  testCase: { id: string; name: string; goal: string; startUrl?: string; [field: string]: unknown }
  agentResult: { success?: boolean; turns: Turn[]; [field: string]: unknown }
  agentSuccess: boolean
  verified: boolean
  verdict?: string
  skipped?: boolean
  criteriaResults?: Array<{ criterion?: string; passed: boolean; detail?: string }>
  turnsUsed: number
  durationMs: number
  [field: string]: unknown
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
    [field: string]: unknown
  }
  [field: string]: unknown
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

export interface ActionPattern {
  action: string
  selector?: string
  occurrences: number
  failures: number
  failureRate: number
}

export interface GoalPattern {
  goalPrefix: string
  attempts: number
  successes: number
  avgTurns: number
  avgDurationMs: number
  commonFailures: string[]
}

export interface TurnWaste {
  category: 'stale-ref' | 'repeated-action' | 'stuck-loop' | 'error' | 'unnecessary-wait'
  turnNumbers: number[]
  description: string
}

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

/** A test suite's analysis, and the hints for the next runs. */
export declare class TrajectoryAnalyzer {
  analyze(suite: TestSuiteResult): RunAnalysis
  /** The `FEEDBACK FROM PREVIOUS RUNS:` block, or ''; `analysis` must come from `analyze`. */
  generateHints(analysis: RunAnalysis): string
}

export type RunStatus = 'running' | 'completed' | 'failed'

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

export interface RunFilters {
  domain?: string
  sessionId?: string
  status?: RunStatus
  limit?: number
}

export interface Scenario {
  goal: string
  startUrl: string
  sessionId: string
  parentRunId: string
}

export declare class RunRegistry {
  constructor(memoryDir: string)
  startRun(opts: { runId: string; sessionId?: string; parentRunId?: string; goal: string; domain: string; startUrl?: string }): string
  updateRun(runId: string, updates: { status?: RunStatus; currentUrl?: string; turnCount?: number; artifactPaths?: string[] }): RunManifest | undefined
  completeRun(
    runId: string,
    result: { success: boolean; finalUrl?: string; summary?: string; result?: string; reason?: string; turnCount: number; artifactPaths?: string[] },
  ): RunManifest | undefined
  getRun(runId: string): RunManifest | undefined
  listRuns(filters?: RunFilters): RunManifest[]
  buildResumeScenario(runId: string, newGoal?: string): Scenario | undefined
  buildForkScenario(runId: string, goal: string): Scenario | undefined
  static generateRunId(): string
}

/** Parts with priorities, assembled highest first within 8,000 characters. */
export declare class ContextBudget {
  add(label: string, content: string, priority: number): void
  build(): string
}

/**
 * Makes the drop-in classes use `db` (a SQLite path, `":memory:"` or a postgres:// URL);
 * `options.now` fixes "now" for every call.
 */
export declare function useDatabase(db: string, options?: { now?: Date | string | number }): void
