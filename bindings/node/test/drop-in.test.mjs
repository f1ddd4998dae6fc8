// The browser-agent-driver drop-in: the reference's classes, names and results, on one
// database. Each case states a behaviour of the reference's memory layer.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
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
  assert.throws(() => big.add('x', 'y', 1.5), { kind: 'invalid_input', input: 'priority' })
})
