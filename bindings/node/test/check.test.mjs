// `store.check()`: the contract's check of a SQLite database (its integrity and the store's own
// invariants), as a report.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { Store, AgentMemoryError, UsageError } from 'durable-agent-memory'
import { tempFolder, EPISODE } from './helpers.mjs'

test('a sound file checks clean, asynchronously and synchronously', async () => {
  const db = join(tempFolder(), 'memory.db')
  const store = await Store.open(db)
  await store.trajectory.record({ partition: 'p', episodes: [EPISODE] })
  const report = await store.check()
  assert.ok(report.checks.length > 0)
  assert.deepEqual(report.findings, [])
  assert.equal(report.database, db)
  assert.deepEqual(store.checkSync().findings, [])
  store.close()
  await assert.rejects(store.check(), UsageError)
})

test('a private database in memory is checked too', async () => {
  const store = await Store.open(':memory:')
  await store.trajectory.record({ partition: 'p', episodes: [EPISODE] })
  const report = store.checkSync()
  assert.ok(report.checks.length > 0)
  assert.deepEqual(report.findings, [])
})

test('a check of a closed store is an error naming it', async () => {
  const store = await Store.open(':memory:')
  store.close()
  assert.throws(() => store.checkSync(), (error) => error instanceof AgentMemoryError)
})
