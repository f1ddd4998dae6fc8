// `store.notes()`: the memory tool's commands on a scope's /memories notes, with the texts the
// tool documents.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Store, NotFoundError, AgentMemoryError } from 'durable-agent-memory'

test('create, str_replace and view answer with the memory tool texts', async () => {
  const store = await Store.open(':memory:')
  const created = await store.notes({ command: 'create', path: '/memories/prefs.txt', file_text: 'pm: npm\n' })
  assert.equal(created.text, 'File created successfully at: /memories/prefs.txt')
  await store.notes({ command: 'str_replace', path: '/memories/prefs.txt', old_str: 'npm', new_str: 'pnpm' })
  const viewed = store.notesSync({ command: 'view', path: '/memories/prefs.txt' })
  assert.match(viewed.text, /pm: pnpm/)
  const elsewhere = await store.notes({ command: 'view', path: '/memories', scope: 'someone-else' })
  assert.doesNotMatch(elsewhere.text, /prefs\.txt/)
})

test('a path outside /memories is refused, naming it', async () => {
  const store = await Store.open(':memory:')
  await assert.rejects(
    store.notes({ command: 'view', path: '/memories/../etc/passwd' }),
    (error) => error instanceof AgentMemoryError && !(error instanceof NotFoundError) && error.message.includes('..'),
  )
})
