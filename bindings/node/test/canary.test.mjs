// A value marked sensitive never comes back: not in any output, not in the database file.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { Store } from 'durable-agent-memory'
import { tempFolder, LOGS, CANARY } from './helpers.mjs'

test('a sensitive value never reaches an output or the database', async () => {
  const db = join(tempFolder(), 'memory.db')
  const store = await Store.open(db)
  const outputs = []
  outputs.push(await store.recording.append({ session: 'canary', logs: LOGS }))
  const trail = await store.recording.templatize({ session: 'canary' })
  outputs.push(trail)
  outputs.push(await store.recording.lint({ session: 'canary', trail: trail.trail }))
  outputs.push(await store.list())
  outputs.push(await store.stats())
  const text = JSON.stringify(outputs)
  assert.ok(text.includes('merchant_password') || text.includes('${merchant_email}'), 'the outputs name the keys')
  assert.ok(!text.includes(CANARY), 'no output holds the sensitive value')
  store.close()
  for (const file of readdirSync(dirname(db))) {
    const bytes = readFileSync(join(dirname(db), file))
    assert.ok(!bytes.includes(Buffer.from(CANARY)), `${file} holds the sensitive value`)
  }
  // And the canary really was given to the store: a test that could not fail would prove nothing.
  assert.ok(JSON.stringify(LOGS).includes(CANARY))
})

test('an error about a sensitive value does not quote it', async () => {
  const store = Store.openSync(':memory:')
  const bad = [{ ...LOGS[0], memorySnapshot: [{ key: 'pw', value: CANARY, sensitive: true, writtenAt: 'not a time' }] }]
  await assert.rejects(store.recording.append({ session: 'canary', logs: bad }), (error) => {
    assert.ok(!error.message.includes(CANARY), error.message)
    return true
  })
})
