// Every memory through the native API, on each database: SQLite file, SQLite in memory and,
// when AGENT_MEMORY_TEST_POSTGRES names a server, PostgreSQL.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Store } from 'durable-agent-memory'
import { databases, EPISODE, RUN, EVENTS, LOGS } from './helpers.mjs'

for (const [name, db] of databases()) {
  test(`every memory on ${name}`, async (t) => {
    const store = await Store.open(db(), { now: '2026-01-01T00:00:00Z' })
    t.after(() => store.close())

    await t.test('trajectory: record, crystallize, recall, patterns', async () => {
      const recorded = await store.trajectory.record({ partition: 'team', episodes: [EPISODE, EPISODE, EPISODE] })
      assert.equal(recorded.episodes, 3)
      const crystallized = await store.trajectory.crystallize({ partition: 'team' })
      assert.equal(crystallized.patterns.length, 1, JSON.stringify(crystallized))
      const recalled = await store.trajectory.recall({ partition: 'team', fingerprint: { affected_layer: 'ci' } })
      assert.deepEqual(recalled.patterns[0].canonical_sequence, EPISODE.trajectory)
      const patterns = store.trajectory.patternsSync({ partition: 'team' })
      assert.equal(patterns.patterns.length, 1)
    })

    await t.test('browser: run start, record, context, runs, resume, fork', async () => {
      const started = await store.browser.runStart({ goal: RUN.goal, domain: 'shop.example.com', start_url: RUN.start_url, run_id: 'run-node-1' })
      assert.equal(started.status, 'running')
      const updated = await store.browser.runUpdate({ run_id: 'run-node-1', turn_count: 1, current_url: RUN.start_url })
      assert.equal(updated.status, 'running')
      const recorded = await store.browser.recordRun({ ...RUN, run_id: 'run-node-1' })
      assert.equal(recorded.steps, 2)
      const context = await store.browser.context({ goal: 'add smart watch x to the cart', url: RUN.start_url })
      assert.match(context.context, /REFERENCE TRAJECTORY/)
      assert.match(context.context, /SESSION HISTORY/)
      const runs = store.browser.runsSync({})
      assert.ok(runs.runs.some((r) => r.run_id === 'run-node-1' && r.status === 'completed'), JSON.stringify(runs))
      const resumed = await store.browser.resume({ run_id: 'run-node-1' })
      assert.equal(resumed.start_url, RUN.start_url)
      const forked = await store.browser.fork({ run_id: 'run-node-1' })
      assert.match(forked.session_id, /^fork_/)
      await store.browser.runStart({ goal: 'second', domain: 'shop.example.com', start_url: RUN.start_url, run_id: 'run-node-2' })
      const completed = await store.browser.runComplete({ run_id: 'run-node-2', success: false, turn_count: 3, reason: 'gave up' })
      assert.equal(completed.status, 'failed')
    })

    await t.test('turns: append, view', async () => {
      const appended = await store.turns.append({ session: 'node-session', events: EVENTS })
      assert.equal(appended.appended, 3)
      const again = await store.turns.append({ session: 'node-session', events: EVENTS, start: 0 })
      assert.equal(again.appended, 0)
      const view = await store.turns.view({ session: 'node-session', provider: 'openai_chat' })
      const sent = JSON.stringify(view)
      assert.ok(sent.includes('cargo test') && sent.includes('101'), sent.slice(0, 300))
    })

    await t.test('recording: append, templatize, lint, next call', async () => {
      const appended = await store.recording.append({ session: 'node-run', logs: LOGS })
      assert.equal(appended.appended, 2)
      const trail = await store.recording.templatize({ session: 'node-run' })
      assert.ok(JSON.stringify(trail).includes('${merchant_email}'))
      const lint = await store.recording.lint({ session: 'node-run', trail: trail.trail })
      assert.ok(Array.isArray(lint.findings), JSON.stringify(lint))
      const next = await store.recording.nextCall({ device: 'web', trail: trail.trail, memory: { merchant_email: 'other@example.com' } })
      assert.equal(typeof next.done, 'boolean', JSON.stringify(next))
    })

    await t.test('list, stats, forget', async () => {
      const listed = await store.list()
      assert.deepEqual(listed.partitions.map((p) => p.partition), ['team'])
      assert.deepEqual(listed.turn_sessions.map((s) => s.session), ['node-session'])
      assert.deepEqual(listed.tool_log_sessions.map((s) => s.session), ['node-run'])
      const stats = store.statsSync()
      assert.ok(stats.schema_version > 0)
      const forgotten = await store.forget({ session: 'node-session' })
      assert.equal(forgotten.events, 3)
      assert.deepEqual((await store.list()).turn_sessions, [])
    })

    await t.test('call by operation name', async () => {
      const listed = await store.call('memory_list')
      assert.deepEqual(listed.partitions.map((p) => p.partition), ['team'])
    })
  })
}

test('text crosses both ways unchanged, through calls and their sync variants', async (t) => {
  const store = await Store.open(':memory:', { now: '2026-01-01T00:00:00Z' })
  t.after(() => store.close())
  // Quotes, backslashes, line and paragraph separators, astral characters and NUL-free
  // control characters: the input crosses as JSON text and the output comes back as text.
  const text = 'say "hi" \\ \u2028\u2029 \u{1F600} \t tab é'
  const events = [
    { type: 'session_started', session: 'text', started_at: 1767225600000 },
    { type: 'user_message', text },
  ]
  await store.turns.append({ session: 'text', events })
  const view = await store.turns.view({ session: 'text', provider: 'anthropic' })
  const viewSync = store.turns.viewSync({ session: 'text', provider: 'anthropic' })
  assert.deepEqual(view, viewSync)
  assert.ok(JSON.stringify(view).includes(JSON.stringify(text).slice(1, -1)), JSON.stringify(view))
  assert.deepEqual(await store.list(), store.listSync())
})

test('a read before the first write answers empty and creates no file', async () => {
  const { existsSync } = await import('node:fs')
  const { join } = await import('node:path')
  const { tempFolder } = await import('./helpers.mjs')
  const path = join(tempFolder(), 'fresh', 'memory.db')
  const store = await Store.open(path)
  try {
    const recalled = await store.trajectory.recall({ partition: 'team', fingerprint: { affected_layer: 'ci' } })
    assert.deepEqual(recalled.patterns, [])
    assert.match(recalled.note, /holds nothing/)
    assert.match(store.notesSync({ command: 'view', path: '/memories' }).text, /^Here/)
    assert.deepEqual(store.listSync().partitions, [])
    assert.equal(existsSync(path), false, 'a read created the database')
    await store.trajectory.record({ partition: 'team', episodes: [EPISODE] })
    assert.equal(existsSync(path), true, 'the first write creates the database')
    assert.equal(store.listSync().partitions[0].episodes, 1)
  } finally {
    store.close()
  }
})
