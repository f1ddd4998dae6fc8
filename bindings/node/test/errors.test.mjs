// Each error kind is an Error subclass with `kind`, `message` and `input`, and bad input from
// JavaScript is rejected naming the argument, never a crash and never half a batch.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import * as memory from 'durable-agent-memory'
import { tempFolder, EPISODE, EVENTS } from './helpers.mjs'

const { Store, AgentMemoryError } = memory

function expectKind(cls, kind, input) {
  return (error) => {
    assert.ok(error instanceof cls, `${error?.name}: ${error?.message}`)
    assert.ok(error instanceof AgentMemoryError)
    assert.ok(error instanceof Error)
    assert.equal(error.kind, kind)
    assert.equal(error.name, cls.name)
    if (input !== undefined) assert.equal(error.input, input)
    assert.ok(error.message.length > 0)
    return true
  }
}

test('usage: a closed store', async () => {
  const store = Store.openSync(':memory:')
  store.close()
  assert.equal(store.closed, true)
  await assert.rejects(store.list(), expectKind(memory.UsageError, 'usage', 'store'))
  assert.throws(() => store.listSync(), expectKind(memory.UsageError, 'usage', 'store'))
})

test('invalid_input: the contract refuses a wrong field, naming it', async () => {
  const store = Store.openSync(':memory:')
  await assert.rejects(store.trajectory.recall({ partition: 3, fingerprint: {} }), expectKind(memory.InvalidInputError, 'invalid_input', 'partition'))
  const wrongStep = { partition: 'p', episodes: [EPISODE, { ...EPISODE, trajectory: 'ab' }] }
  for (const call of [() => store.trajectory.recordSync(wrongStep), () => store.trajectory.recallSync({ partition: 'p', fingerprint: { problem_topology: 1 } })]) {
    assert.throws(call, (error) => {
      assert.ok(error instanceof memory.InvalidInputError, `${error?.name}: ${error?.message}`)
      assert.match(error.input, /^(episodes\[1\]\.trajectory|fingerprint\.problem_topology)$/)
      assert.ok(error.message.includes(`: ${error.input}: invalid type:`), error.message)
      return true
    })
  }
})

test('not_found: resuming an unknown run', async () => {
  const store = Store.openSync(':memory:')
  await assert.rejects(store.browser.resume({ run_id: 'run_nowhere' }), expectKind(memory.NotFoundError, 'not_found', 'run_nowhere'))
})

test('conflict: another event at a stored position', async () => {
  const store = Store.openSync(':memory:')
  await store.turns.append({ session: 's', events: EVENTS.map((e) => (e.session ? { ...e, session: 's' } : e)) })
  await assert.rejects(
    store.turns.append({ session: 's', start: 1, events: [{ type: 'user_message', text: 'Something else.' }] }),
    expectKind(memory.ConflictError, 'conflict'),
  )
})

test('io: a database folder that cannot be created', async () => {
  // Opening leaves a missing file alone; the first write tries to create it, and fails.
  const store = await Store.open('/proc/no-such-folder/memory.db')
  assert.deepEqual((await store.list()).partitions, [])
  await assert.rejects(
    store.trajectory.record({ partition: 'team', episodes: [EPISODE] }),
    expectKind(memory.IoError, 'io'),
  )
  store.close()
})

test('database: a file that is not a database', async () => {
  const file = join(tempFolder(), 'not-a-database.db')
  writeFileSync(file, 'this is plain text, not SQLite '.repeat(200))
  await assert.rejects(Store.open(file), expectKind(memory.DatabaseError, 'database'))
})

test('invalid_input: a database inside a file, naming the file', async () => {
  const file = join(tempFolder(), 'plain-file')
  writeFileSync(file, 'x')
  await assert.rejects(Store.open(join(file, 'memory.db')), expectKind(memory.InvalidInputError, 'invalid_input', file))
})

test('bad JavaScript values are rejected naming the argument', async () => {
  const store = Store.openSync(':memory:')
  const cases = [
    [undefined, 'input'],
    [null, 'input'],
    ['text', 'input'],
    [[1, 2], 'input'],
    [{ partition: 'p\ud800', episodes: [EPISODE] }, 'input.partition'],
    [{ partition: 'p', episodes: [EPISODE, undefined] }, 'input.episodes[1]'],
    [{ partition: 'p', episodes: [{ ...EPISODE, outcome: { success: true, score: NaN } }] }, 'input.episodes[0].outcome.score'],
    [{ partition: 'p', episodes: [{ ...EPISODE, outcome: { success: true, score: 10n } }] }, 'input.episodes[0].outcome.score'],
    [{ partition: 'p', episodes: [{ ...EPISODE, trajectory: [() => 1] }] }, 'input.episodes[0].trajectory[0]'],
    [{ partition: 'p', episodes: [{ ...EPISODE, fingerprint: new Map() }] }, 'input.episodes[0].fingerprint'],
  ]
  for (const [input, where] of cases) {
    await assert.rejects(store.trajectory.record(input), expectKind(memory.InvalidInputError, 'invalid_input', where))
    assert.throws(() => store.trajectory.recordSync(input), expectKind(memory.InvalidInputError, 'invalid_input', where))
  }
  const cycle = { partition: 'p', episodes: [] }
  cycle.episodes.push(cycle)
  await assert.rejects(store.trajectory.record(cycle), expectKind(memory.InvalidInputError, 'invalid_input', 'input.episodes[0]'))
  let deep = {}
  const root = { partition: 'p', episodes: [{ ...EPISODE, outcome: deep }] }
  for (let i = 0; i < 10_000; i++) deep = deep.next = {}
  await assert.rejects(store.trajectory.record(root), expectKind(memory.InvalidInputError, 'invalid_input'))
  // Huge values: the contract refuses a number no count can hold, a huge string is just text.
  await assert.rejects(store.trajectory.record({ partition: 'p', episodes: [EPISODE], cluster_threshold: 1e300 }), expectKind(memory.InvalidInputError, 'invalid_input'))
  const big = 'x'.repeat(4 << 20)
  const recorded = await store.trajectory.record({ partition: 'big', episodes: [{ ...EPISODE, trajectory: [big] }] })
  assert.equal(recorded.episodes, 1)
  // Nothing of the refused batches was written.
  assert.deepEqual((await store.list()).partitions.map((p) => p.partition), ['big'])
  for (const db of [undefined, 3, '', 'a\ud800b']) {
    await assert.rejects(Store.open(db), expectKind(memory.InvalidInputError, 'invalid_input', 'db'))
  }
  assert.throws(() => Store.openSync(':memory:', { now: 'yesterday' }), expectKind(memory.InvalidInputError, 'invalid_input', 'options.now'))
  assert.throws(() => new Store({}), expectKind(memory.UsageError, 'usage'))
})

test('a batch with one bad episode writes nothing', async () => {
  const store = Store.openSync(':memory:')
  await assert.rejects(
    store.trajectory.record({ partition: 'p', episodes: [EPISODE, { ...EPISODE, fingerprint: 'not an object' }] }),
    expectKind(memory.InvalidInputError, 'invalid_input'),
  )
  assert.deepEqual((await store.list()).partitions, [])
})

test('a database in a new folder is created with it', async () => {
  const folder = join(tempFolder(), 'a', 'b')
  const store = await Store.open(join(folder, 'memory.db'))
  assert.equal((await store.list()).partitions.length, 0)
  mkdirSync(folder, { recursive: true })
})
