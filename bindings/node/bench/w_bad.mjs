// W-bad through the npm package: what `cargo xtask bench` reports as the workload
// `W-bad (Node)`, next to the Rust library's W-bad measured earlier in the same run.
//
//     node w_bad.mjs --sizes 1000,10000 --figures target/bench-figures/node.jsonl \
//       --rust target/bench-figures/W-bad.jsonl
//
// Per size N, on a fresh SQLite file: W-bad's N trajectories (its generator, `workloads.md`,
// the same splitmix64 stream as `crates/browser-memory/benches/workload/mod.rs`, checked against
// its spot values) written as a `.agent-memory/` folder and brought in with
// `agent-memory browser import` through the package; then, through the drop-in's
// `TrajectoryStore.findBestMatch` (the clock frozen at the workload's "now", as the Rust bench
// has it), match p50/p99 over the 1,000 queries with scoring off and on; then recording a run
// (`store.browser.recordRunSync`, one transaction each) into the store holding the N
// trajectories, the same 2,000 runs the Rust bench records, in the same scope (`shared`, where
// the N trajectories are imported a second time): a scope's name is in every row and index
// key a run writes, so a longer one costs more. Each figure carries the Rust library's figure
// of the same name and N as its baseline, and the addon's cost per call (ours minus Rust's)
// is a figure of its own; the recorded run's median is also next to the same run through the
// contract's `browser_record_run` in Rust, from its JSON text (`record_run` bench of
// `agent-memory-contract`).

import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { Store, runCli } from 'durable-agent-memory'
import { TrajectoryStore, useDatabase } from 'durable-agent-memory/browser-agent-driver'

const WORKLOAD = 'W-bad (Node)'
const NOW = 1_767_225_600_000 // 2026-01-01T00:00:00.000Z
const DAY = 86_400_000
const MASK = (1n << 64n) - 1n
const B36 = '0123456789abcdefghijklmnopqrstuvwxyz'

/** splitmix64, as `agent_memory_core::SplitMix64`: `below(n)` by plain modulo. */
class SplitMix64 {
  #state
  constructor(seed) {
    this.#state = BigInt(seed)
  }
  next() {
    this.#state = (this.#state + 0x9e3779b97f4a7c15n) & MASK
    let z = this.#state
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK
    return z ^ (z >> 31n)
  }
  below(n) {
    return n === 0 ? 0 : Number(this.next() % BigInt(n))
  }
}

const origin = (j) => `https://site${j}.example.com`
const word = (i) => `w${i}`
const goalWords = (rng) => {
  const len = 5 + rng.below(8)
  return Array.from({ length: len }, () => word(rng.below(500)))
}

/** djb2 over UTF-16 units as a signed 32-bit number: the reference's snapshot hash. */
function snapshotHash(text) {
  let h = 5381
  for (let i = 0; i < text.length; i++) h = (Math.imul(h, 33) + text.charCodeAt(i)) | 0
  return h
}

/** W-bad's generator, consumed in the workload's order. */
function generate(n) {
  const rng = new SplitMix64(42)
  for (let p = 0; p < 20; p++) {
    rng.below(101)
    const len = 100 + rng.below(901)
    let c = ''
    while (c.length < len) c += `${word(rng.below(500))} `
  }
  for (let f = 0; f < 10_000; f++) rng.below(200), rng.below(100)
  const roles = ['button', 'link', 'textbox']
  const selectors = Array.from({ length: 10_000 }, () => {
    const e = rng.below(300)
    return { element: `${roles[e % 3]} "w${e}"`, selector: `@e${rng.below(1000)}` }
  })
  const runs = Array.from({ length: 1000 }, (_, i) => {
    const d = rng.below(10)
    const goal = goalWords(rng).join(' ')
    const success = rng.below(100) < 80
    const turnCount = 1 + rng.below(30)
    const finalUrl = `${origin(d)}/p${rng.below(5)}`
    return { runId: `run_${String(i).padStart(6, '0')}`, domain: `site${d}.example.com`, goal, success, turnCount, finalUrl, startUrl: `${origin(d)}/` }
  })
  const trajectories = []
  for (let t = 0; t < n; t++) {
    const o = rng.below(10)
    const goal = goalWords(rng).join(' ')
    const steps = Array.from({ length: 8 }, (_, s) => {
      const kind = rng.below(2)
      const k = rng.below(50)
      const action = kind === 0 ? { action: 'click', selector: `@e${k}` } : { action: 'type', selector: `@e${k}`, text: word(rng.below(500)) }
      const url = `${origin(o)}/p${rng.below(5)}`
      const verified = rng.below(100) < 90
      return { url, action, snapshotHash: String(snapshotHash(`page ${url} step ${s} ref e${k}`)), verified }
    })
    const success = rng.below(100) < 80
    const durationMs = 10_000 + rng.below(110_001)
    const ts = NOW - rng.below(20 * DAY)
    const suffix = Array.from({ length: 6 }, () => B36[rng.below(36)]).join('')
    trajectories.push({ id: `traj_${ts}_${suffix}`, goal, origin: origin(o), steps, success, durationMs, model: 'bench-model', timestamp: new Date(ts).toISOString() })
  }
  const queries = Array.from({ length: 1000 }, (_, q) => {
    if (q % 2 === 0) {
      const o = rng.below(10)
      return { goal: goalWords(rng).join(' '), origin: origin(o) }
    }
    const i = rng.below(n)
    const words = trajectories[i].goal.split(' ')
    for (let r = 0; r < 2; r++) {
      const pos = rng.below(words.length)
      words[pos] = word(rng.below(500))
    }
    return { goal: words.join(' '), origin: trajectories[i].origin }
  })
  return { selectors, runs, trajectories, queries }
}

/** The Rust generator's spot values (`tests/it/w_bad.rs`): the two streams must agree. */
function checkGenerator() {
  const w = generate(1000)
  const t = w.trajectories[0]
  const got = [t.id, t.goal, t.durationMs, t.timestamp, t.steps[0].snapshotHash, w.trajectories[999].id, w.queries[1].goal, w.runs[0].goal]
  const want = [
    'traj_1766493387525_hh820c',
    'w110 w282 w463 w185 w289 w215',
    27558,
    '2025-12-23T12:36:27.525Z',
    '1403489727',
    'traj_1766734347115_77bhkp',
    'w145 w416 w438 w57 w392 w194 w224 w385 w432',
    'w392 w403 w491 w369 w43 w377',
  ]
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    throw new Error(`the W-bad generator drifted from the Rust one: ${JSON.stringify(got)} != ${JSON.stringify(want)}`)
  }
}

/** The run the Rust bench's `report(w, i)` records, as `browser_record_run` takes it. */
function report(w, i) {
  const t = w.trajectories[i % w.trajectories.length]
  const run = w.runs[i % w.runs.length]
  return {
    goal: t.goal,
    start_url: run.startUrl,
    success: t.success,
    model: t.model,
    outcome: `finished ${run.goal}`,
    final_url: run.finalUrl,
    run_id: `${run.runId}_${i}`,
    turns: t.steps.map((s) => ({ url: s.url, snapshot: s.snapshotHash, action: s.action, verified: s.verified, duration_ms: Math.floor(t.durationMs / 8) })),
    selectors: [w.selectors[i % w.selectors.length], w.selectors[(i + 1) % w.selectors.length]],
  }
}

function percentile(samples, p) {
  const sorted = [...samples].sort((a, b) => a - b)
  const rank = Math.min(Math.max(Math.ceil(p * sorted.length), 1), sorted.length)
  return sorted[rank - 1]
}

/** The Rust library's figures of this run, by `figure@n`. */
function rustFigures(file) {
  const figures = new Map()
  if (!file || !existsSync(file)) return figures
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue
    const f = JSON.parse(line)
    if (f.workload === 'W-bad') figures.set(`${f.figure}@${f.n}`, f.value)
  }
  return figures
}

function emit(file, figure, n, value, unit, baseline, lowerIsBetter) {
  const line = { workload: WORKLOAD, figure, n, value, unit, baseline: baseline ?? null, side: 'ours', lower_is_better: lowerIsBetter }
  appendFileSync(file, `${JSON.stringify(line)}\n`)
  const against = baseline === undefined ? '' : ` (Rust ${baseline.toFixed(3)})`
  console.log(`node W-bad ${figure} n=${n}: ${value.toFixed(3)} ${unit}${against}`)
}

function measure(folder, figures, rust, n) {
  const w = generate(n)
  // The workload as browser-agent-driver's files, brought in through the package.
  const files = join(folder, `agent-memory-${n}`)
  mkdirSync(files)
  for (const t of w.trajectories) writeFileSync(join(files, `${t.id}.json`), JSON.stringify(t))
  const db = join(folder, `w_bad_${n}.db`)
  const scope = join(folder, `trajectories-${n}`)
  const status = runCli(['browser', 'import', files, '--db', db, '--scope', scope, '--now', String(NOW)])
  if (status !== 0) throw new Error(`agent-memory browser import exited with ${status}`)
  // The scope the runs are recorded into, holding the same N trajectories as the Rust bench's.
  const shared = runCli(['browser', 'import', files, '--db', db, '--scope', 'shared', '--now', String(NOW)])
  if (shared !== 0) throw new Error(`agent-memory browser import --scope shared exited with ${shared}`)
  rmSync(files, { recursive: true, force: true })

  useDatabase(db, { now: NOW })
  for (const scoring of [false, true]) {
    const label = scoring ? 'scoring on' : 'scoring off'
    const store = new TrajectoryStore(scope, { enableScoring: scoring })
    for (const q of w.queries.slice(0, 50)) store.findBestMatch(q.goal, { origin: q.origin })
    let matched = 0
    const micros = w.queries.map((q) => {
      const start = process.hrtime.bigint()
      const found = store.findBestMatch(q.goal, { origin: q.origin })
      const elapsed = Number(process.hrtime.bigint() - start) / 1e3
      matched += found ? 1 : 0
      return elapsed
    })
    // The Rust library's count on the same workload (`tests/it/w_bad.rs`): the same matches.
    if (n === 1000 && matched !== 317) throw new Error(`${matched} of the 1,000 queries matched through the package, the library matches 317`)
    console.log(`node W-bad n=${n}, ${label}: ${matched} of ${w.queries.length} queries matched`)
    for (const [p, name] of [
      [0.5, 'p50'],
      [0.99, 'p99'],
    ]) {
      const figure = `match ${name} on sqlite, ${label}`
      const ours = percentile(micros, p)
      const theirs = rust.get(`${figure}@${n}`)
      emit(figures, figure, n, ours, 'us', theirs, true)
      if (theirs !== undefined) emit(figures, `addon cost per match call over Rust, ${name}, ${label}`, n, ours - theirs, 'us', undefined, true)
    }
  }

  const store = Store.openSync(db, { now: NOW })
  const runs = 2000
  const reports = Array.from({ length: runs }, (_, i) => report(w, i))
  const calls = []
  const start = process.hrtime.bigint()
  for (const r of reports) {
    const call = process.hrtime.bigint()
    store.browser.recordRunSync(r)
    calls.push(Number(process.hrtime.bigint() - call) / 1e3)
  }
  const rate = runs / (Number(process.hrtime.bigint() - start) / 1e9)
  store.close()
  const figure = 'recorded runs per second on sqlite holding N trajectories (one transaction each)'
  const theirs = rust.get(`${figure}@${n}`)
  emit(figures, figure, n, rate, 'runs/s', theirs, false)
  if (theirs !== undefined) emit(figures, 'addon cost per recorded run over Rust, mean', n, 1e6 / rate - 1e6 / theirs, 'us', undefined, true)
  // The median call, next to the Rust library's: the addon's cost per call without the
  // checkpoints and collections that land on a few calls.
  const median = 'recorded run median on sqlite holding N trajectories'
  const ours = percentile(calls, 0.5)
  const rustMedian = rust.get(`${median}@${n}`)
  emit(figures, median, n, ours, 'us', rustMedian, true)
  if (rustMedian !== undefined) emit(figures, 'addon cost per recorded run over Rust, median', n, ours - rustMedian, 'us', undefined, true)
  const contract = rust.get(`recorded run median through the contract on sqlite holding N trajectories@${n}`)
  if (contract !== undefined) emit(figures, 'addon cost per recorded run over the contract in Rust, median', n, ours - contract, 'us', undefined, true)
  inProcess(db, figures, w, n)
}

/**
 * The package's own cost per recorded run, measured in one process: the same runs recorded
 * call by call, in turns, through `recordRunSync` and through the addon's bench-only timer
 * (`timeCallsJsonSync`: the contract operation on the input's JSON text, output text
 * included, timed in Rust inside the addon), on one store handle. Each call's input is built
 * just before it, outside the timed span, as an agent builds its report just before it
 * records it: inputs all built before the first call sat out of the caches by then, and
 * reading them again for the check and the JSON text cost the package 4-5 us more a call
 * at 10,000. The Rust side's JSON text is made just before its call too. Both calls of a
 * turn record the same report (the second finds its pages warm), so which of the two goes
 * first is drawn at random for each turn: alternating by the turn's parity made the parity
 * of the workload's reports part of the figure (the same Rust call timed against itself that
 * way differed by 3-4 us at 10,000). Both meet the same
 * store, allocator and machine state, so the difference of the medians is what the check,
 * the JSON text and the crossing add. A control runs the same design with the Rust-timed call
 * on both sides: its difference (ideally 0) is the method's own error, reported with it. Only
 * an addon built with the `bench` feature (as `cargo xtask bench` builds it) has the timer.
 */
function inProcess(db, figures, w, n) {
  const require = createRequire(import.meta.url)
  const native = require(join(dirname(require.resolve('durable-agent-memory')), '..', 'native.js'))
  if (typeof native.NativeStore.prototype.timeCallsJsonSync !== 'function') {
    console.log('node W-bad: the addon has no Rust-side timer (built without the bench feature); the in-process comparison is skipped')
    return
  }
  const raw = native.NativeStore.openSync(db, NOW)
  const store = new Store(raw, db)
  const runs = 2000
  const ours = []
  const theirs = []
  const viaPackage = (i) => {
    const input = { ...report(w, i), run_id: `js_${i}` }
    const start = process.hrtime.bigint()
    store.browser.recordRunSync(input)
    ours.push(Number(process.hrtime.bigint() - start) / 1e3)
  }
  const inRust = (i) => theirs.push(raw.timeCallsJsonSync('browser_record_run', [JSON.stringify({ ...report(w, i), run_id: `rust_${i}` })])[0])
  const order = new SplitMix64(7)
  for (let i = 0; i < runs; i++) {
    if (order.below(2) === 0) {
      viaPackage(i)
      inRust(i)
    } else {
      inRust(i)
      viaPackage(i)
    }
  }
  // The control: the same turns with the Rust-timed call on both sides.
  const controls = [[], []]
  const control = (side, i) => controls[side].push(raw.timeCallsJsonSync('browser_record_run', [JSON.stringify({ ...report(w, i), run_id: `control_${side}_${i}` })])[0])
  for (let i = 0; i < runs; i++) {
    const first = order.below(2)
    control(first, i)
    control(1 - first, i)
  }
  store.close()
  const rust = percentile(theirs, 0.5)
  const js = percentile(ours, 0.5)
  emit(figures, 'recorded run median through the package, in turns with the same call timed in Rust in the process', n, js, 'us', rust, true)
  emit(figures, 'addon cost per recorded run over the same call timed in Rust in the process, median', n, js - rust, 'us', undefined, true)
  emit(figures, "the in-process method's own error: the Rust-timed call against itself, difference of medians", n, percentile(controls[0], 0.5) - percentile(controls[1], 0.5), 'us', undefined, true)
}

function main() {
  const args = process.argv.slice(2)
  const option = (name, fallback) => {
    const at = args.indexOf(name)
    return at >= 0 ? args[at + 1] : fallback
  }
  const figures = option('--figures')
  if (!figures) throw new Error('usage: w_bad.mjs --sizes 1000,10000 --figures FILE [--rust W-bad.jsonl]')
  checkGenerator()
  const rust = rustFigures(option('--rust'))
  const folder = mkdtempSync(join(tmpdir(), 'w-bad-node-'))
  try {
    for (const n of option('--sizes', '1000').split(',').map(Number).filter((n) => n > 0)) measure(folder, figures, rust, n)
  } finally {
    rmSync(folder, { recursive: true, force: true })
  }
}

main()
