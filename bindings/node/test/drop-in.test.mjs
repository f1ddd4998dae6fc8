// The browser-agent-driver drop-in: the reference's classes, names and results, on one
// database. Each case states a behaviour of the reference's memory layer.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempFolder } from './helpers.mjs'

const db = join(tempFolder(), 'drop-in.db')
process.env.AGENT_MEMORY_DB = db
const { TrajectoryStore, AppKnowledge, SelectorCache, ProjectStore } = await import('durable-agent-memory/browser-agent-driver')
const esm = await import('durable-agent-memory/browser-agent-driver')

const step = (n, action = { action: 'click', selector: `@b${n}` }, extra = {}) => ({
  turn: n,
  state: { url: 'https://shop.example.com/p', title: 'Shop', snapshot: `page ${n}` },
  action,
  durationMs: 250,
  ...extra,
})

test('both entry points give the same classes', async () => {
  const { createRequire } = await import('node:module')
  const cjs = createRequire(import.meta.url)('durable-agent-memory/browser-agent-driver')
  assert.equal(cjs.TrajectoryStore, esm.TrajectoryStore)
})

test('TrajectoryStore: a saved run drops complete and abort steps and is listed', () => {
  const store = new TrajectoryStore(tempFolder(), { similarityThreshold: 0.2 })
  assert.deepEqual(store.loadAll(), [])
  const saved = store.save('open the billing page', [step(1), step(2), step(3, { action: 'abort', reason: 'x' })], true, 'model-a')
  assert.match(saved.id, /^traj_\d+_[0-9a-z]{6}$/)
  assert.equal(saved.goal, 'open the billing page')
  assert.equal(saved.steps.length, 2)
  assert.equal(saved.durationMs, 750)
  assert.equal(saved.model, 'model-a')
  const listed = store.loadAll()
  assert.deepEqual(listed.map((t) => t.id), [saved.id])
})

test('TrajectoryStore: matching takes the most similar successful run above the threshold', () => {
  const folder = tempFolder()
  const store = new TrajectoryStore(folder, 0.3)
  store.save('export the monthly sales report', [step(1)], true, 'm')
  store.save('delete an old invoice', [step(2)], true, 'm')
  store.save('export the weekly sales report', [step(3)], false, 'm')
  assert.equal(store.findBestMatch('export the sales report')?.goal, 'export the monthly sales report')
  assert.equal(new TrajectoryStore(folder, 0.95).findBestMatch('export the sales report'), null)
  assert.equal(store.findBestMatch('the weather tomorrow'), null)
  // Another folder is another memory.
  assert.equal(new TrajectoryStore(tempFolder(), 0.1).findBestMatch('export the monthly sales report'), null)
})

test('TrajectoryStore: a match is the listed trajectory, field for field and in the same order', () => {
  const folder = tempFolder()
  const store = new TrajectoryStore(folder, 0.3)
  const actions = [
    { action: 'type', selector: '@q', text: 'kettle', delay: 12.5, repeat: 3, offset: -7 },
    { action: 'scroll', by: 2 ** 60, back: -(2 ** 60), still: 0 },
    // A `__proto__` key comes back as it always has, through the object's prototype.
    JSON.parse('{"action":"click","selector":"@b","__proto__":{"odd":true}}'),
  ]
  for (const [i, action] of actions.entries()) {
    const goal = `search the shop catalogue for ${['kettles', 'teapots', 'mugs'][i]}`
    store.save(goal, [step(1, action), step(2)], true, 'm')
    const listed = store.loadAll().find((t) => t.goal === goal)
    // A number option reaches the contract as it is, any other leaves its default: same result.
    for (const matcher of [store, new TrajectoryStore(folder, { similarityThreshold: 0.3, ttlDays: '30' })]) {
      const found = matcher.findBestMatch(goal)
      // Keys in the same order, the same values, and the action's prototype alike (each
      // conversion makes its own prototype object of a `__proto__` key).
      assert.equal(JSON.stringify(found), JSON.stringify(listed))
      assert.deepStrictEqual(Object.getPrototypeOf(found.steps[0].action), Object.getPrototypeOf(listed.steps[0].action))
      if (!Object.hasOwn(action, '__proto__')) assert.deepStrictEqual(found, listed)
    }
  }
})

test('TrajectoryStore: a page snapshot cut inside a surrogate pair is saved all the same', () => {
  const store = new TrajectoryStore(tempFolder())
  const half = { url: 'https://shop.example.com/p', snapshot: 'a cut emoji \ud83d' }
  const saved = store.save('read the cut page', [step(1, undefined, { state: half }), step(2)], true, 'm')
  assert.equal(saved.steps.length, 2)
  assert.deepEqual(store.loadAll(), [saved])
  assert.notEqual(saved.steps[0].snapshotHash, saved.steps[1].snapshotHash)
})

test('TrajectoryStore: replay needs a near-identical goal on the same origin', () => {
  const store = new TrajectoryStore(tempFolder())
  store.save('add the blue kettle to the cart', [step(1)], true, 'm', { origin: 'https://shop.example.com' })
  const found = store.findReplayCandidate('add the blue kettle to the cart', { origin: 'https://shop.example.com' })
  assert.equal(found?.similarity, 1)
  assert.equal(found?.trajectory.goal, 'add the blue kettle to the cart')
  assert.equal(store.findReplayCandidate('add the blue kettle to the cart', { origin: 'https://other.example.com' }), null)
})

test('TrajectoryStore: a reference lists the goal and each step', () => {
  const store = new TrajectoryStore(tempFolder())
  const saved = store.save(
    'find the pricing page',
    [step(1, { action: 'click', selector: '@nav' }, { verified: true }), step(2, { action: 'navigate', url: 'https://shop.example.com/pricing' })],
    true,
    'm',
  )
  const text = store.formatAsReference(saved)
  assert.match(text, /^Goal: find the pricing page$/m)
  assert.match(text, /Steps \(2 total\)/)
  assert.match(text, /click @nav .*\[verified\]/)
  assert.match(text, /navigate to https:\/\/shop\.example\.com\/pricing/)
})

test('AppKnowledge: confidence starts at 0.6, confirmation boosts, contradiction halves, pruning below 0.1', () => {
  const file = join(tempFolder(), 'knowledge.json')
  const kb = new AppKnowledge(file, 'shop.example.com')
  assert.deepEqual(kb.getFacts(), [])
  kb.recordFact('timing', 'search', '800ms')
  const first = kb.getFact('timing', 'search')
  assert.equal(first.confidence, 0.6)
  assert.equal(first.sources, 1)
  kb.recordFact('timing', 'search', '800ms')
  assert.ok(kb.getFact('timing', 'search').confidence > 0.6)
  assert.equal(kb.getFact('timing', 'search').sources, 2)
  kb.recordFact('quirk', 'banner', 'a')
  kb.recordFact('quirk', 'banner', 'b')
  const quirks = kb.getFactsByType('quirk', 0)
  assert.equal(quirks.find((f) => f.value === 'a').confidence, 0.3)
  assert.equal(quirks.find((f) => f.value === 'b').confidence, 0.6)
  kb.recordFact('quirk', 'banner', 'c')
  kb.recordFact('quirk', 'banner', 'd')
  assert.equal(kb.getFacts(0).find((f) => f.value === 'a'), undefined, 'a fact below 0.1 is pruned')
  assert.deepEqual(kb.getFacts(0.65).map((f) => f.value), ['800ms'])
  // The same file is the same memory; another domain is not.
  assert.equal(new AppKnowledge(file, 'shop.example.com').getFacts().length > 0, true)
  assert.deepEqual(new AppKnowledge(file, 'other.example.com').getFacts(), [])
})

test('AppKnowledge: sessions, newest first, the newest five kept', () => {
  const kb = new AppKnowledge(join(tempFolder(), 'knowledge.json'), 'shop.example.com')
  assert.deepEqual(kb.getSessions(), [])
  for (let day = 1; day <= 7; day++) {
    kb.recordSession({
      id: `s${day}`,
      goal: `goal ${day}`,
      outcome: 'done',
      success: day % 2 === 0,
      finalUrl: 'https://shop.example.com/done',
      timestamp: `2026-01-0${day}T10:00:00.000Z`,
      turnsUsed: day,
      durationMs: 1000 * day,
    })
  }
  const sessions = kb.getSessions()
  assert.deepEqual(sessions.map((s) => s.id), ['s7', 's6', 's5', 's4', 's3'])
  assert.equal(sessions[1].success, true)
  assert.equal(sessions[0].turnsUsed, 7)
})

test('AppKnowledge: batches, types and the rendered block', () => {
  const kb = new AppKnowledge(join(tempFolder(), 'knowledge.json'), 'shop.example.com')
  assert.equal(kb.formatForBrain(), '')
  kb.recordFacts([
    { type: 'timing', key: 'load', value: '2s' },
    { type: 'selector', key: 'cart', value: '#cart' },
    { type: 'pattern', key: 'login', value: 'email then password' },
  ])
  assert.equal(kb.getFacts().length, 3)
  assert.equal(kb.getFactsByType('pattern').length, 1)
  kb.recordFact('timing', 'load', '2s')
  const text = kb.formatForBrain()
  assert.match(text, /APP KNOWLEDGE/)
  assert.match(text, /TIMING:/)
  assert.match(text, /load: 2s/)
  kb.save()
})

test('SelectorCache: refs and stable selectors, counts, ranking and the rendered block', () => {
  const file = join(tempFolder(), 'selectors.json')
  const cache = new SelectorCache(file)
  assert.deepEqual(cache.getAll(), [])
  assert.equal(cache.formatForBrain(), '')
  assert.equal(cache.lookup('link "Home"'), undefined)
  cache.recordSuccess('link "Home"', '@e1')
  assert.equal(cache.lookup('link "Home"').lastRef, '@e1')
  assert.equal(cache.lookup('link "Home"').stableSelector, undefined)
  cache.recordSuccess('button "Pay"', '#pay')
  cache.recordSuccess('button "Pay"', '@e9')
  const pay = cache.lookup('button "Pay"')
  assert.equal(pay.stableSelector, '#pay')
  assert.equal(pay.lastRef, '@e9')
  assert.equal(pay.successCount, 2)
  assert.deepEqual(cache.getAll().map((e) => e.element), ['button "Pay"', 'link "Home"'])
  const text = cache.formatForBrain()
  assert.match(text, /KNOWN SELECTORS/)
  assert.match(text, /button "Pay" .*#pay.*used 2x/)
  assert.equal(cache.formatForBrain(1).split('\n').filter((l) => l.includes('"')).length, 1)
  assert.equal(new SelectorCache(file).lookup('link "Home"').lastRef, '@e1')
})

test('ProjectStore: the folder layout names each domain, hints live in the database', () => {
  const root = join(tempFolder(), 'memory')
  const project = new ProjectStore(root)
  assert.equal(project.getRoot(), root)
  assert.ok(existsSync(join(root, 'domains')) && existsSync(join(root, 'runs')))
  assert.match(project.getDomainDir('https://localhost:5173/a/b'), /localhost_5173$/)
  assert.match(project.getTrajectoryDir('https://shop.example.com'), /shop\.example\.com[\\/]trajectories$/)
  assert.match(project.getKnowledgePath('https://shop.example.com'), /shop\.example\.com[\\/]knowledge\.json$/)
  assert.match(project.getSelectorCachePath('https://app.example.com:3000'), /app\.example\.com_3000[\\/]selectors\.json$/)
  assert.ok(existsSync(project.getDomainDir('not a url at all')))
  assert.equal(project.loadHints(), null)
  project.saveHints('Prefer data-testid selectors.')
  assert.equal(new ProjectStore(root).loadHints(), 'Prefer data-testid selectors.')
})

test('everything went to the one database', () => {
  assert.ok(existsSync(db))
})

test('RunRegistry: start, update, complete, list, resume and fork', async () => {
  const { RunRegistry } = await import('durable-agent-memory/browser-agent-driver')
  const folder = tempFolder()
  const runs = new RunRegistry(folder)
  const id = RunRegistry.generateRunId()
  assert.match(id, /^run_\d+_[0-9a-z]{6}$/)
  assert.equal(runs.startRun({ runId: id, goal: 'buy tea', domain: 'shop.example.com', startUrl: 'https://shop.example.com/' }), id)
  assert.equal(runs.getRun(id).status, 'running')
  assert.equal(runs.updateRun(id, { currentUrl: 'https://shop.example.com/tea', turnCount: 2 }).turnCount, 2)
  const done = runs.completeRun(id, { success: true, finalUrl: 'https://shop.example.com/cart', turnCount: 4, summary: 'in the cart' })
  assert.equal(done.status, 'completed')
  assert.equal(done.finalUrl, 'https://shop.example.com/cart')
  assert.equal(runs.updateRun('run_unknown', { turnCount: 1 }), undefined)
  assert.deepEqual(runs.listRuns({ domain: 'shop.example.com' }).map((r) => r.runId), [id])
  assert.deepEqual(runs.listRuns({ status: 'failed' }), [])
  const resume = runs.buildResumeScenario(id)
  assert.equal(resume.startUrl, 'https://shop.example.com/cart')
  assert.equal(resume.parentRunId, id)
  const fork = runs.buildForkScenario(id, 'buy coffee instead')
  assert.match(fork.sessionId, /^fork_/)
  assert.equal(fork.goal, 'buy coffee instead')
  assert.equal(runs.buildForkScenario('run_unknown', 'x'), undefined)
  assert.deepEqual(new RunRegistry(tempFolder()).listRuns(), [])
})

test('ContextBudget: highest priority first, the overflowing part cut, then nothing', async () => {
  const { ContextBudget } = await import('durable-agent-memory/browser-agent-driver')
  const budget = new ContextBudget()
  assert.equal(budget.build(), '')
  budget.add('low', 'LOW', 1)
  budget.add('high', 'HIGH', 50)
  const small = budget.build()
  assert.ok(small.indexOf('HIGH') < small.indexOf('LOW'), small)
  const big = new ContextBudget()
  big.add('first', 'a'.repeat(7000), 40)
  big.add('second', 'b'.repeat(3000), 30)
  big.add('third', 'ZZZ', 10)
  const built = big.build()
  assert.ok(built.length <= 8000 + '...[truncated]'.length + 10, String(built.length))
  assert.match(built, /\.\.\.\[truncated\]/)
  assert.ok(!built.includes('ZZZ'), 'a part after the overflow is left out')
  assert.throws(() => big.add('x', 'y', Number.NaN), { kind: 'invalid_input', input: 'priority' })
})

test('AppKnowledge: clearPatterns forgets facts and keeps sessions, reset forgets both', () => {
  const file = join(tempFolder(), 'knowledge.json')
  const kb = new AppKnowledge(file, 'shop.example.com')
  kb.clearPatterns()
  kb.reset()
  assert.equal(kb.factCount, 0)
  kb.recordFact('timing', 'load', '2s')
  kb.recordFact('quirk', 'banner', 'a')
  kb.recordFact('quirk', 'banner', 'b')
  assert.equal(kb.factCount, 3)
  const session = { id: 's1', goal: 'g', outcome: 'done', success: true, finalUrl: 'https://shop.example.com/', timestamp: '2026-01-01T10:00:00.000Z', turnsUsed: 1, durationMs: 5 }
  kb.recordSession(session)
  const selectors = new SelectorCache(join(tempFolder(), 'selectors.json'))
  selectors.recordSuccess('button "Pay"', '#pay')
  kb.clearPatterns()
  assert.equal(kb.factCount, 0)
  assert.match(kb.formatForBrain(), /^SESSION HISTORY \(1 previous run on this site\):/)
  assert.doesNotMatch(kb.formatForBrain(), /APP KNOWLEDGE/)
  assert.deepEqual(kb.getSessions().map((s) => s.id), ['s1'])
  kb.recordFact('timing', 'load', '3s')
  assert.equal(new AppKnowledge(file, 'shop.example.com').getFact('timing', 'load').confidence, 0.6, 'learning starts afresh')
  kb.reset()
  assert.equal(new AppKnowledge(file, 'shop.example.com').factCount, 0)
  assert.deepEqual(kb.getSessions(), [])
  assert.equal(selectors.lookup('button "Pay"').successCount, 1, 'selectors are not knowledge')
})

test('ProjectStore: a run summary is kept in the database and written as runs/<id>.json', async () => {
  const { readdirSync, readFileSync } = await import('node:fs')
  const root = join(tempFolder(), 'memory')
  const project = new ProjectStore(root)
  assert.deepEqual(project.loadRunSummaries(), [])
  const id = project.saveRunSummary(suiteOf([result({ verified: true }), result({ verified: false, name: 'checkout' })]))
  assert.match(id, /^run_\d+_[0-9a-z]+$/)
  assert.deepEqual(readdirSync(join(root, 'runs')), [`${id}.json`])
  const file = JSON.parse(readFileSync(join(root, 'runs', `${id}.json`), 'utf8'))
  assert.equal(file.id, id)
  assert.equal(file.model, 'model-a')
  assert.equal(file.passed, 1)
  assert.equal(file.failed, 1)
  assert.deepEqual(file.tests.map((t) => [t.name, t.verified, t.turnsUsed]), [['case', true, 2], ['checkout', false, 2]])
  assert.deepEqual(new ProjectStore(root).loadRunSummaries(), [file])
  assert.deepEqual(new ProjectStore(join(tempFolder(), 'memory')).loadRunSummaries(), [])
  assert.throws(() => project.saveRunSummary({ results: 'no' }), { kind: 'invalid_input', input: 'suite' })
})

/** A test result of browser-agent-driver's test runner, with the fields the analysis reads. */
function result({ verified = true, success = true, turns = [step(1), step(2)], name = 'case', goal = 'finish the checkout', ...rest } = {}) {
  const duration = turns.reduce((sum, t) => sum + t.durationMs, 0)
  return {
    testCase: { id: `id-${name}`, name, startUrl: 'https://shop.example.com', goal },
    agentResult: { success, turns, totalMs: duration },
    agentSuccess: success,
    verified,
    verdict: verified ? 'passed' : 'failed',
    turnsUsed: turns.length,
    durationMs: duration,
    ...rest,
  }
}

function suiteOf(results) {
  const passed = results.filter((r) => r.verified).length
  return {
    model: 'model-a',
    timestamp: '2026-01-01T00:00:00.000Z',
    results,
    summary: { total: results.length, passed, failed: results.length - passed, passRate: passed / results.length, avgTurns: 2, avgDurationMs: 500, totalDurationMs: 1000 },
  }
}

test('TrajectoryAnalyzer: efficiency, verification gaps, patterns, waste and failure reasons', async () => {
  const { TrajectoryAnalyzer } = await import('durable-agent-memory/browser-agent-driver')
  const analyzer = new TrajectoryAnalyzer()
  const same = { action: 'click', selector: '@same' }
  const analysis = analyzer.analyze(
    suiteOf([
      result({ turns: [step(1), step(2, undefined, { error: 'Stale ref @b2' }), step(3, undefined, { error: 'timeout' })] }),
      result({ verified: false, turns: [step(1, same), step(2, same), step(3, same), step(4, same)], criteriaResults: [{ criterion: 'c', passed: false, detail: 'cart empty' }] }),
      result({ verified: false, verdict: 'wrong page', turns: [step(1, { action: 'wait', ms: 0 })] }),
      result({ skipped: true, turns: [step(1, undefined, { error: 'x' })] }),
    ]),
  )
  assert.equal(analysis.totalTests, 4)
  assert.equal(analysis.suiteModel, 'model-a')
  assert.deepEqual(analysis.turnEfficiency, { totalTurns: 8, productiveTurns: 5, wastedTurns: 3, efficiencyRate: 5 / 8 })
  assert.deepEqual(analysis.verificationGaps, { agentSaysSuccess: 3, groundTruthConfirms: 1, falsePositiveRate: 2 / 3 })
  assert.deepEqual(analysis.actionPatterns[0], { action: 'click', selector: '@same', occurrences: 4, failures: 0, failureRate: 0 })
  assert.equal(analysis.actionPatterns.find((p) => p.selector === '@b2').failures, 1)
  assert.deepEqual(analysis.wasteBreakdown.map((w) => [w.category, w.turnNumbers]), [
    ['stale-ref', [2]],
    ['error', [3]],
    ['stuck-loop', [1, 2, 3]],
    ['stuck-loop', [2, 3, 4]],
  ])
  assert.deepEqual(analysis.topFailureReasons, ['cart empty', 'wrong page'])
  assert.deepEqual(analysis.goalPatterns, [
    { goalPrefix: 'finish the checkout', attempts: 3, successes: 1, avgTurns: 8 / 3, avgDurationMs: 2000 / 3, commonFailures: ['failed', 'wrong page'] },
  ])
  const hints = analyzer.generateHints(analysis)
  assert.match(hints, /^FEEDBACK FROM PREVIOUS RUNS:\n- EFFICIENCY WARNING: Only 63% of turns are productive\. 3 turns/)
  assert.match(hints, /- ACCURACY WARNING: The agent reports success 67% more often/)
  assert.match(hints, /- STALE REFS: 1 turns wasted/)
  assert.match(hints, /- STUCK LOOPS DETECTED: The agent repeated the same action sequence 2 time\(s\)/)
  assert.match(hints, /- COMMON FAILURES: cart empty; wrong page$/)
  assert.equal(analyzer.generateHints(analyzer.analyze(suiteOf([result()]))), '', 'a healthy suite gives no hints')
  assert.throws(() => analyzer.generateHints({ ...analysis }), { kind: 'invalid_input', input: 'analysis' })
  assert.throws(() => analyzer.analyze({}), { kind: 'invalid_input', input: 'suite' })
})

test('ContextBudget: empty until a part with text is added; priorities may be fractions', async () => {
  const { ContextBudget } = await import('durable-agent-memory/browser-agent-driver')
  const budget = new ContextBudget()
  assert.equal(budget.isEmpty, true)
  budget.add('nothing', '', 99)
  assert.equal(budget.isEmpty, true, 'a part without text does not count')
  assert.equal(budget.build(), '')
  budget.add('middle', 'MIDDLE', 2.5)
  budget.add('top', 'TOP', 2.75)
  budget.add('bottom', 'BOTTOM', 2.25)
  assert.equal(budget.isEmpty, false)
  assert.equal(budget.build(), 'TOP\nMIDDLE\nBOTTOM')
})

test('AppKnowledge: the block for the prompt opens with the session history, then the facts', () => {
  const kb = new AppKnowledge(join(tempFolder(), 'knowledge.json'), 'tea.example.com')
  kb.recordFact('quirk', 'banner', 'a cookie banner covers the footer')
  kb.recordSession({
    id: 'visit-1',
    goal: 'order green tea',
    outcome: 'ordered two boxes',
    success: false,
    finalUrl: 'https://tea.example.com/checkout',
    timestamp: '2026-02-03T04:05:06.000Z',
    turnsUsed: 6,
    durationMs: 12_400,
  })
  const block = kb.formatForBrain()
  assert.equal(
    block.split('\n').slice(0, 3).join('\n'),
    [
      'SESSION HISTORY (1 previous run on this site):',
      '[2026-02-03 04:05] ✗ "order green tea" → ordered two boxes (6 turns, 12s)',
      '  Final URL: https://tea.example.com/checkout',
    ].join('\n'),
  )
  assert.ok(block.indexOf('APP KNOWLEDGE') > block.indexOf('Final URL'), block)
})

test('TrajectoryStore: findReplayCandidate takes the caller\'s minSimilarity', () => {
  const store = new TrajectoryStore(tempFolder())
  store.save('print the march invoice as pdf', [step(1)], true, 'm', { origin: 'https://shop.example.com' })
  const goal = 'print the april invoice as pdf'
  assert.equal(store.findReplayCandidate(goal, { origin: 'https://shop.example.com' }), null, 'below the default 0.85')
  const loose = store.findReplayCandidate(goal, { origin: 'https://shop.example.com', minSimilarity: 0.6 })
  assert.ok(loose && loose.similarity >= 0.6 && loose.similarity < 0.85, JSON.stringify(loose))
  assert.equal(store.findReplayCandidate(goal, { origin: 'https://shop.example.com', minSimilarity: 0.99 }), null)
})

test('RunRegistry: updateRun keeps every field it is given, and leaves the others', async () => {
  const { RunRegistry } = await import('durable-agent-memory/browser-agent-driver')
  const runs = new RunRegistry(tempFolder())
  runs.startRun({ runId: 'r-upd', goal: 'renew the plan', domain: 'billing.example.com' })
  const updated = runs.updateRun('r-upd', { finalUrl: 'https://billing.example.com/renewed', summary: 'half way', turnCount: 3 })
  assert.equal(updated.finalUrl, 'https://billing.example.com/renewed')
  const stored = runs.getRun('r-upd')
  assert.equal(stored.finalUrl, 'https://billing.example.com/renewed')
  assert.equal(stored.summary, 'half way')
  assert.equal(stored.turnCount, 3)
  assert.equal(stored.status, 'running', 'a field left out stays')
  assert.equal(stored.goal, 'renew the plan')
})

test('files the reference kept in a folder are adopted the first time a class uses it', async () => {
  const { RunRegistry } = await import('durable-agent-memory/browser-agent-driver')
  // A trajectories folder laid out as the reference's TrajectoryStore writes it.
  const trajectories = tempFolder()
  const kept = {
    id: 'kept-1',
    goal: 'download the yearly statement',
    origin: 'https://bank.example.com',
    success: true,
    durationMs: 9000,
    model: 'm',
    timestamp: new Date().toISOString(),
    steps: [{ url: 'https://bank.example.com/a', action: { action: 'click', selector: '@s1' }, snapshotHash: 'h', verified: true }],
  }
  writeFileSync(join(trajectories, 'kept-1.json'), JSON.stringify(kept))
  writeFileSync(join(trajectories, 'broken.json'), '{ not json')
  const store = new TrajectoryStore(trajectories)
  assert.equal(store.findBestMatch('download the yearly statement')?.id, 'kept-1')
  assert.equal(store.findReplayCandidate('download the yearly statement', { origin: 'https://bank.example.com/x' })?.trajectory.id, 'kept-1')
  // The database is the memory from then on: a file changed later is not read again.
  writeFileSync(join(trajectories, 'kept-1.json'), JSON.stringify({ ...kept, goal: 'something else entirely' }))
  assert.equal(new TrajectoryStore(trajectories).loadAll()[0].goal, 'download the yearly statement')

  // A knowledge file in the older format, whose runs were facts of type "session".
  const site = tempFolder()
  writeFileSync(
    join(site, 'knowledge.json'),
    JSON.stringify({
      domain: 'bank.example.com',
      facts: [
        { type: 'session', key: 'latest', value: 'paid the bill', confidence: 1, sources: 1, lastSeen: '2026-01-05T00:00:00.000Z' },
        { type: 'timing', key: 'login', value: '3s', confidence: 0.7, sources: 2, lastSeen: '2026-01-05T00:00:00.000Z' },
      ],
      updatedAt: '2026-01-05T00:00:00.000Z',
    }),
  )
  const kb = new AppKnowledge(join(site, 'knowledge.json'), 'bank.example.com')
  assert.deepEqual(kb.getSessions().map((s) => s.outcome), ['paid the bill'])
  assert.deepEqual(kb.getFacts(0).map((f) => [f.type, f.key]), [['timing', 'login']])

  // Run manifests under agent-runs/.
  const memory = tempFolder()
  mkdirSync(join(memory, 'agent-runs'))
  const manifest = (runId, updatedAt) => ({
    runId, status: 'completed', goal: 'g', domain: 'bank.example.com', startedAt: '2026-01-01T00:00:00Z', updatedAt, artifactPaths: [], turnCount: 1,
  })
  writeFileSync(join(memory, 'agent-runs', 'a.json'), JSON.stringify(manifest('a', '2026-01-01T00:00:00Z')))
  writeFileSync(join(memory, 'agent-runs', 'b.json'), JSON.stringify(manifest('b', '2026-01-02T00:00:00Z')))
  assert.deepEqual(new RunRegistry(memory).listRuns().map((r) => r.runId), ['b', 'a'])
})
