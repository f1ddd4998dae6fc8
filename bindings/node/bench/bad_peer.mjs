// The browser-agent-driver drop-in against the reference's own classes: what
// `cargo xtask bench --peers` reports as the workload `W-bad drop-in (Node)`, each figure of
// the drop-in next to the reference's measured in the same process on the same inputs.
//
//     node bad_peer.mjs --reference DIR --typescript DIR --sizes 1000,10000 --figures FILE
//
// `--reference` is a copy of browser-agent-driver's sources at the commit the drop-in matches
// (7fa06d5, package 0.36.0), kept outside this repository; its `src/memory/store.ts` and the
// modules it imports are compiled to JavaScript with the package's own pinned TypeScript
// (`--typescript`, `transpileModule`: types are dropped, nothing else changes) into a folder
// beside the figures, and its `TrajectoryStore` is imported from there.
//
// Per size N: N trajectories written as the reference's files (its `JSON.stringify(t, null,
// 2)`), which the reference's store reads and the drop-in adopts on first use, so both hold
// the same trajectories under the same ids. Goals share common words ("the", "on"), so about
// a tenth of the stored goals pass the 0.3 threshold for any query (the case where matching
// used to load every candidate in full). Then, on both sides in turns (which side goes
// first drawn at random for each turn):
//   1. the differential check: every query's `findBestMatch` answer (its id) must be the
//      same on both sides, threshold 0.3 and 0.5, trace scoring off and on (except where the
//      spec's divergence 2 lets the drop-in find one where the reference finds none);
//   2. `findBestMatch` alone (the reference's cache warm, as between two saves of a run);
//   3. `save` alone;
//   4. the save-then-match loop an agent runs: `save`, then `findBestMatch` for the next goal
//      (the reference reads its folder again after each save).
// Each figure is the drop-in's median or p99 in microseconds, its baseline the reference's;
// last, where the addon has the bench feature's timer, the drop-in's `save` against the same
// operation timed in Rust inside the addon (`saveInRust`), which splits a save's time between
// the package and the contract with its store;
// the machine's load (`/proc/loadavg`) is printed at the start and end of each size.

import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { TrajectoryStore, useDatabase } from 'durable-agent-memory/browser-agent-driver'

const WORKLOAD = 'W-bad drop-in (Node)'
const DAY = 86_400_000
const MASK = (1n << 64n) - 1n
const B36 = '0123456789abcdefghijklmnopqrstuvwxyz'
const VERBS = ['open', 'click', 'find', 'buy', 'search', 'add', 'check', 'view', 'fill', 'submit']

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

/** A goal of common words around two rarer ones: `buy the w12 on the w140`. */
const goal = (rng) => `${VERBS[rng.below(VERBS.length)]} the w${rng.below(200)} on the w${rng.below(200)}`
const origin = (j) => `https://site${j}.example.com`

/** A run's turns as the agent reports them (`complete` ends it and is no step). */
function turns(rng, o) {
  const list = Array.from({ length: 8 }, (_, s) => {
    const k = rng.below(50)
    const action = rng.below(2) === 0 ? { action: 'click', selector: `@e${k}` } : { action: 'type', selector: `@e${k}`, text: `w${rng.below(500)}` }
    const url = `${origin(o)}/p${rng.below(5)}`
    return { turn: s + 1, state: { url, title: 'Page', snapshot: `page ${url} step ${s} ref e${k}` }, action, durationMs: 1000 + rng.below(9000), verified: rng.below(100) < 90 }
  })
  list.push({ turn: 9, state: { url: `${origin(o)}/done`, title: 'Done', snapshot: 'done' }, action: { action: 'complete', result: 'done' }, durationMs: 500, verified: true })
  return list
}

/** djb2 over UTF-16 units as a signed 32-bit number: the reference's snapshot hash. */
function snapshotHash(text) {
  let h = 5381
  for (let i = 0; i < text.length; i++) h = (Math.imul(h, 33) + text.charCodeAt(i)) | 0
  return h
}

/** N stored trajectories (recorded within the last 20 days), queries and runs to save. */
function generate(n, now) {
  const rng = new SplitMix64(47)
  const trajectories = Array.from({ length: n }, () => {
    const o = rng.below(10)
    const steps = turns(rng, o)
      .filter((t) => t.action.action !== 'complete')
      .map((t) => ({ url: t.state.url, action: t.action, snapshotHash: String(snapshotHash(t.state.snapshot)), verified: t.verified }))
    const ts = now - DAY - rng.below(19 * DAY)
    const suffix = Array.from({ length: 6 }, () => B36[rng.below(36)]).join('')
    return { id: `traj_${ts}_${suffix}`, goal: goal(rng), origin: origin(o), steps, success: rng.below(100) < 80, durationMs: 10_000 + rng.below(110_001), model: 'bench-model', timestamp: new Date(ts).toISOString() }
  })
  const queries = Array.from({ length: 1000 }, () => ({ goal: goal(rng), origin: rng.below(2) === 0 ? origin(rng.below(10)) : undefined }))
  const runs = Array.from({ length: 1000 }, () => {
    const o = rng.below(10)
    return { goal: goal(rng), turns: turns(rng, o), success: rng.below(100) < 80, origin: `${origin(o)}/` }
  })
  return { trajectories, queries, runs }
}

function percentile(samples, p) {
  const sorted = [...samples].sort((a, b) => a - b)
  const rank = Math.min(Math.max(Math.ceil(p * sorted.length), 1), sorted.length)
  return sorted[rank - 1]
}

const load = () => (existsSync('/proc/loadavg') ? readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ') : 'unknown')

/**
 * The reference's `src/memory/store.ts` and every module it imports by a relative path,
 * compiled to ES modules under `out`; answers the compiled store's URL.
 */
function compileReference(reference, typescript, out) {
  const require = createRequire(join(resolve(typescript), 'package.json'))
  const ts = require(resolve(typescript))
  const src = join(reference, 'src')
  const pending = [join(src, 'memory', 'store.ts')]
  const done = new Set()
  while (pending.length > 0) {
    const file = pending.pop()
    if (done.has(file)) continue
    done.add(file)
    const text = readFileSync(file, 'utf8')
    const js = ts.transpileModule(text, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false } }).outputText
    const target = join(out, relative(src, file)).replace(/\.ts$/, '.js')
    mkdirSync(dirname(target), { recursive: true })
    writeFileSync(target, js)
    // Relative imports that survive compilation (type-only ones are gone).
    for (const [, spec] of js.matchAll(/from\s+['"](\.{1,2}\/[^'"]+)['"]/g)) {
      pending.push(resolve(dirname(file), spec.replace(/\.js$/, '.ts')))
    }
  }
  writeFileSync(join(out, 'package.json'), '{ "type": "module" }\n')
  return pathToFileURL(join(out, 'memory', 'store.js')).href
}

function emit(file, figure, n, ours, theirs) {
  const line = { workload: WORKLOAD, figure, n, value: ours, unit: 'us', baseline: theirs, side: 'ours', lower_is_better: true }
  appendFileSync(file, `${JSON.stringify(line)}\n`)
  console.log(`${WORKLOAD} ${figure} n=${n}: drop-in ${ours.toFixed(1)} us, reference ${theirs.toFixed(1)} us (${(theirs / ours).toFixed(2)}x)`)
}

/** Times `call` in microseconds into `into`, answering its result. */
function timed(into, call) {
  const start = process.hrtime.bigint()
  const result = call()
  into.push(Number(process.hrtime.bigint() - start) / 1e3)
  return result
}

/** Runs `ours(i)` and `theirs(i)` for each i, which first drawn by `order`. */
function inTurns(count, order, ours, theirs) {
  for (let i = 0; i < count; i++) {
    if (order.below(2) === 0) {
      ours(i)
      theirs(i)
    } else {
      theirs(i)
      ours(i)
    }
  }
}

function emitBoth(figures, figure, n, ours, theirs) {
  emit(figures, `${figure} p50`, n, percentile(ours, 0.5), percentile(theirs, 0.5))
  emit(figures, `${figure} p99`, n, percentile(ours, 0.99), percentile(theirs, 0.99))
}

function measure(Reference, folder, figures, n) {
  console.log(`${WORKLOAD} n=${n}: load ${load()} at the start`)
  const now = Date.now()
  const w = generate(n, now)
  const files = join(folder, `trajectories-${n}`)
  mkdirSync(files)
  for (const t of w.trajectories) writeFileSync(join(files, `${t.id}.json`), JSON.stringify(t, null, 2))
  const db = join(folder, `drop-in-${n}.db`)
  useDatabase(db)

  // 1. The differential check, on the stored trajectories only.
  let compared = 0
  let divergent = 0
  for (const threshold of [0.3, 0.5]) {
    for (const enableScoring of [false, true]) {
      const ours = new TrajectoryStore(files, { similarityThreshold: threshold, enableScoring })
      const theirs = new Reference(files, { similarityThreshold: threshold, enableScoring })
      // The reference scans every trajectory per query: a sample of the queries at 10,000.
      for (const q of w.queries.slice(0, n > 1000 ? 300 : w.queries.length)) {
        const a = ours.findBestMatch(q.goal, { origin: q.origin })?.id ?? null
        const b = theirs.findBestMatch(q.goal, { origin: q.origin })?.id ?? null
        // The spec's divergence 2: with trace scoring on, the reference checks only its
        // top-scored trajectory against the threshold, so it may find nothing where the
        // drop-in finds the best of those that pass.
        if (a !== b && enableScoring && b === null) {
          divergent++
          continue
        }
        if (a !== b) {
          throw new Error(`the drop-in and the reference disagree on ${JSON.stringify(q)} (threshold ${threshold}, scoring ${enableScoring}): ${a} != ${b}`)
        }
        compared++
      }
    }
  }
  console.log(`${WORKLOAD} n=${n}: the drop-in and the reference agree on ${compared} matches (${divergent} more answered only by the drop-in, the spec's divergence 2)`)

  const ours = new TrajectoryStore(files, { similarityThreshold: 0.3 })
  const theirs = new Reference(files, { similarityThreshold: 0.3 })
  const order = new SplitMix64(7)
  const match = [[], []]
  const find = (side, store) => (i) => timed(match[side], () => store.findBestMatch(w.queries[i].goal, { origin: w.queries[i].origin }))
  for (let i = 0; i < 50; i++) find(0, ours)(i), find(1, theirs)(i)
  match[0].length = match[1].length = 0
  inTurns(w.queries.length, order, find(0, ours), find(1, theirs))
  emitBoth(figures, 'findBestMatch alone, common words, threshold 0.3,', n, match[0], match[1])

  // Saves go to their own folders, so the loop's matches meet the N trajectories plus what
  // was saved before them on each side.
  const save = [[], []]
  const saver = (side, store, offset) => (i) => {
    const r = w.runs[(i + offset) % w.runs.length]
    timed(save[side], () => store.save(r.goal, r.turns, r.success, 'bench-model', { origin: r.origin }))
  }
  const saves = Math.min(500, w.runs.length)
  inTurns(saves, order, saver(0, ours, 0), saver(1, theirs, 0))
  emitBoth(figures, 'save alone', n, save[0], save[1])

  const loop = [[[], []], [[], []]]
  const step = (side, store) => (i) => {
    const r = w.runs[(i + saves) % w.runs.length]
    timed(loop[0][side], () => store.save(r.goal, r.turns, r.success, 'bench-model', { origin: r.origin }))
    const q = w.queries[i % w.queries.length]
    timed(loop[1][side], () => store.findBestMatch(q.goal, { origin: q.origin }))
  }
  // The reference reads every file again after a save: fewer turns at 10,000.
  inTurns(n > 1000 ? 100 : 200, order, step(0, ours), step(1, theirs))
  emitBoth(figures, 'save in the save-then-match loop', n, loop[0][0], loop[0][1])
  emitBoth(figures, 'findBestMatch in the save-then-match loop', n, loop[1][0], loop[1][1])
  // Last, so the saves it adds to the drop-in's side meet no figure of the reference.
  saveInRust(db, files, figures, w, n, order)
  console.log(`${WORKLOAD} n=${n}: load ${load()} at the end (${readdirSync(files).length} reference files)`)
}

/**
 * Where a save's time goes: the drop-in's `save` in turns with the same operation
 * (`browser_save_trajectory`, on the JSON text the drop-in sends) timed in Rust inside the
 * addon (`timeCallsJsonSync`, its answer's text included), on a second handle to the same
 * database and in the same scope, which goes first drawn at random for each turn. The
 * difference of the medians is what the package adds (the checks, the JSON text both ways,
 * the crossing); the rest is the contract and the store. Only an addon built with the
 * `bench` feature (as `cargo xtask bench` builds it) has the timer.
 */
function saveInRust(db, files, figures, w, n, order) {
  const require = createRequire(import.meta.url)
  const native = require(join(dirname(require.resolve('durable-agent-memory')), '..', 'native.js'))
  if (typeof native.NativeStore.prototype.timeCallsJsonSync !== 'function') {
    console.log(`${WORKLOAD} n=${n}: the addon has no Rust-side timer (built without the bench feature); the save's split is not measured`)
    return
  }
  const raw = native.NativeStore.openSync(db)
  const ours = new TrajectoryStore(files, { similarityThreshold: 0.3 })
  const scope = resolve(files)
  const [viaPackage, inRust] = [[], []]
  const run = (i) => w.runs[i % w.runs.length]
  const package_ = (i) => {
    const r = run(i)
    timed(viaPackage, () => ours.save(r.goal, r.turns, r.success, 'bench-model', { origin: r.origin }))
  }
  const rust = (i) => {
    const r = run(i)
    const text = JSON.stringify({ scope, goal: r.goal, turns: r.turns, success: r.success === true, model: 'bench-model', origin: r.origin })
    inRust.push(raw.timeCallsJsonSync('browser_save_trajectory', [text])[0])
  }
  inTurns(Math.min(500, w.runs.length), order, package_, rust)
  raw.close()
  const js = percentile(viaPackage, 0.5)
  const contract = percentile(inRust, 0.5)
  const line = { workload: WORKLOAD, figure: 'save alone through the drop-in, in turns with the same call timed in Rust in the process, p50', n, value: js, unit: 'us', baseline: contract, side: 'ours', lower_is_better: true }
  appendFileSync(figures, `${JSON.stringify(line)}\n`)
  const share = { workload: WORKLOAD, figure: 'package cost per save over the same call timed in Rust in the process, median', n, value: js - contract, unit: 'us', baseline: null, side: 'ours', lower_is_better: true }
  appendFileSync(figures, `${JSON.stringify(share)}\n`)
  console.log(`${WORKLOAD} save n=${n}: drop-in ${js.toFixed(1)} us, the same call in Rust ${contract.toFixed(1)} us: the package adds ${(js - contract).toFixed(1)} us`)
}

async function main() {
  const args = process.argv.slice(2)
  const option = (name, fallback) => {
    const at = args.indexOf(name)
    return at >= 0 ? args[at + 1] : fallback
  }
  const figures = option('--figures')
  const reference = option('--reference')
  const typescript = option('--typescript')
  if (!figures || !reference || !typescript) {
    throw new Error('usage: bad_peer.mjs --reference DIR --typescript DIR --sizes 1000,10000 --figures FILE')
  }
  const folder = mkdtempSync(join(tmpdir(), 'bad-peer-'))
  try {
    const { TrajectoryStore: Reference } = await import(compileReference(reference, typescript, join(folder, 'reference')))
    for (const n of option('--sizes', '1000').split(',').map(Number).filter((n) => n > 0)) measure(Reference, folder, figures, n)
  } finally {
    rmSync(folder, { recursive: true, force: true })
  }
}

await main()
