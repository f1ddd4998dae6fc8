// `store.check()`: the command line's integrity check of a SQLite file, as a report.
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

test('a database with no file is an error, not a report', async () => {
  const store = await Store.open(':memory:')
  await assert.rejects(store.check(), (error) => error instanceof AgentMemoryError && error.message.includes(':memory:'))
})
