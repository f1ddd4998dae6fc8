// Two worker threads and two processes share one database file: every write of each lands.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Worker } from 'node:worker_threads'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Store } from 'durable-agent-memory'
import { tempFolder } from './helpers.mjs'

const writer = fileURLToPath(new URL('./writer.mjs', import.meta.url))
const WRITES = 25

function worker(db, partition) {
  return new Promise((resolve, reject) => {
    const w = new Worker(writer, { argv: [db, partition, String(WRITES)] })
    w.on('error', reject)
    w.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`worker ${partition} exited with ${code}`))))
  })
}

function child(db, partition) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [writer, db, partition, String(WRITES)], { stdio: ['ignore', 'inherit', 'inherit'] })
    p.on('error', reject)
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`process ${partition} exited with ${code}`))))
  })
}

async function episodesBy(db) {
  const store = await Store.open(db)
  const listed = await store.list()
  store.close()
  return Object.fromEntries(listed.partitions.map((p) => [p.partition, p.episodes]))
}

test('two worker threads write to one file', async () => {
  const db = join(tempFolder(), 'shared.db')
  await Promise.all([worker(db, 'thread-a'), worker(db, 'thread-b')])
  assert.deepEqual(await episodesBy(db), { 'thread-a': WRITES, 'thread-b': WRITES })
})

test('two processes write to one file', async () => {
  const db = join(tempFolder(), 'shared.db')
  await Promise.all([child(db, 'process-a'), child(db, 'process-b')])
  assert.deepEqual(await episodesBy(db), { 'process-a': WRITES, 'process-b': WRITES })
})
