// `memoryToolHandlers`: Anthropic's memory tool on a store's notes, through the Anthropic SDK's
// own helper (`betaMemoryTool`) and its tool runner, with the tool-use inputs a model sends.
// No API key and no network: the runner's HTTP calls go to a local `fetch` that answers as
// the Messages API would.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import Anthropic from '@anthropic-ai/sdk'
import { betaMemoryTool } from '@anthropic-ai/sdk/helpers/beta/memory'
import { Store, memoryToolHandlers, InvalidInputError } from 'durable-agent-memory'
import { CANARY, tempFolder } from './helpers.mjs'

/** The memory tool on a fresh store's notes of `scope`. */
async function tool(scope = 'user-42', store) {
  store ??= await Store.open(':memory:')
  return { store, memory: betaMemoryTool(memoryToolHandlers(store, { scope })) }
}

test('the SDK helper takes the handlers: the tool is memory_20250818', async () => {
  const { memory } = await tool()
  assert.equal(memory.type, 'memory_20250818')
  assert.equal(memory.name, 'memory')
})

test('each command answers with the memory tool text', async () => {
  const { memory } = await tool()
  const path = '/memories/preferences.md'
  assert.equal(await memory.run({ command: 'create', path, file_text: 'Package manager: npm\nEditor: vim\n' }), `File created successfully at: ${path}`)
  assert.equal(
    await memory.run({ command: 'view', path }),
    // The text ends with a newline, so its last line is empty, as the tool numbers it.
    `Here's the content of ${path} with line numbers:\n     1\tPackage manager: npm\n     2\tEditor: vim\n     3\t`,
  )
  assert.equal(await memory.run({ command: 'view', path, view_range: [2, 2] }), `Here's the content of ${path} with line numbers:\n     2\tEditor: vim`)
  const replaced = await memory.run({ command: 'str_replace', path, old_str: 'npm', new_str: 'pnpm' })
  assert.match(replaced, /^The memory file has been edited\. Here is the snippet showing the change \(with line numbers\):\n/)
  assert.match(replaced, /     1\tPackage manager: pnpm/)
  assert.equal(await memory.run({ command: 'insert', path, insert_line: 0, insert_text: '# Preferences' }), `The file ${path} has been edited.`)
  assert.match(await memory.run({ command: 'view', path }), /     1\t# Preferences\n     2\tPackage manager: pnpm/)
  const listing = await memory.run({ command: 'view', path: '/memories' })
  assert.match(listing, /^Here're the files and directories up to 2 levels deep in \/memories, excluding hidden items and node_modules:\n/)
  assert.match(listing, /\t\/memories\/preferences\.md$/m)
  assert.equal(
    await memory.run({ command: 'rename', old_path: path, new_path: '/memories/user/preferences.md' }),
    `Successfully renamed ${path} to /memories/user/preferences.md`,
  )
  assert.equal(await memory.run({ command: 'delete', path: '/memories/user' }), 'Successfully deleted /memories/user')
  assert.doesNotMatch(await memory.run({ command: 'view', path: '/memories' }), /preferences/)
})

test('a failed command rejects with the tool error text, which the runner gives the model', async () => {
  const { memory } = await tool()
  const path = '/memories/notes.txt'
  await memory.run({ command: 'create', path, file_text: 'a a\n' })
  const cases = [
    [{ command: 'view', path: '/memories/missing.txt' }, 'The path /memories/missing.txt does not exist. Please provide a valid path.'],
    [{ command: 'create', path, file_text: 'again' }, `File ${path} already exists`],
    [{ command: 'str_replace', path, old_str: 'b', new_str: 'c' }, `No replacement was performed, old_str \`b\` did not appear verbatim in ${path}.`],
    [{ command: 'str_replace', path, old_str: 'a', new_str: 'c' }, 'No replacement was performed. Multiple occurrences of old_str `a` in lines: 1, 1. Please ensure it is unique'],
    [{ command: 'delete', path: '/memories/missing.txt' }, 'The path /memories/missing.txt does not exist'],
    [{ command: 'rename', old_path: '/memories/missing.txt', new_path: '/memories/x.txt' }, 'The path /memories/missing.txt does not exist'],
  ]
  for (const [input, expected] of cases) {
    await assert.rejects(memory.run(input), (error) => {
      assert.ok(error instanceof Error, input.command)
      if (typeof expected === 'string') assert.equal(error.message, expected)
      else assert.match(error.message, expected)
      return true
    })
  }
})

test('paths outside /memories are refused and nothing is written', async () => {
  const { memory } = await tool()
  for (const path of ['/etc/passwd', '/memories/../etc/passwd', '/memories/%2e%2e/x', 'memories/x']) {
    await assert.rejects(memory.run({ command: 'create', path, file_text: 'x' }), Error, path)
  }
  assert.doesNotMatch(await memory.run({ command: 'view', path: '/memories' }), /passwd|\/x\b/)
})

test('scopes keep notes apart and the store keeps them across opens', async () => {
  const db = join(tempFolder(), 'notes.db')
  const first = await tool('alice', await Store.open(db))
  await first.memory.run({ command: 'create', path: '/memories/a.txt', file_text: 'alice only' })
  const bob = await tool('bob', await Store.open(db))
  await assert.rejects(bob.memory.run({ command: 'view', path: '/memories/a.txt' }), /does not exist/)
  const again = await tool('alice', await Store.open(db))
  assert.match(await again.memory.run({ command: 'view', path: '/memories/a.txt' }), /alice only/)
})

test('a secret never reaches the notes or the answers', async () => {
  const store = await Store.open(':memory:')
  const memory = betaMemoryTool(memoryToolHandlers(store, { scope: 's', secrets: { api_token: CANARY } }))
  await memory.run({ command: 'create', path: '/memories/setup.md', file_text: `token: ${CANARY}\n` })
  const shown = await memory.run({ command: 'view', path: '/memories/setup.md' })
  assert.ok(!shown.includes(CANARY), shown)
  assert.match(shown, /\$\{api_token\}/)
  const raw = await store.notes({ command: 'view', path: '/memories/setup.md', scope: 's' })
  assert.ok(!raw.text.includes(CANARY))
})

test('bad arguments are refused, naming them', async () => {
  const store = await Store.open(':memory:')
  assert.throws(() => memoryToolHandlers(undefined), { kind: 'invalid_input', input: 'store' })
  assert.throws(() => memoryToolHandlers(store, { scope: 42 }), { kind: 'invalid_input', input: 'options.scope' })
  await assert.rejects(memoryToolHandlers(store).view(null), InvalidInputError)
})

/** A `fetch` answering the Messages API: first the model's tool calls, then its last reply. */
function fakeApi(toolCalls) {
  const requests = []
  const reply = (body) => new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } })
  const message = (content, stop) => ({
    id: `msg_${requests.length}`,
    type: 'message',
    role: 'assistant',
    model: 'claude-test',
    content,
    stop_reason: stop,
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 1 },
  })
  const fetch = async (_url, init) => {
    requests.push(JSON.parse(init.body))
    if (requests.length === 1) {
      return reply(message(toolCalls.map((input, i) => ({ type: 'tool_use', id: `toolu_${i}`, name: 'memory', input })), 'tool_use'))
    }
    return reply(message([{ type: 'text', text: 'Noted.' }], 'end_turn'))
  }
  return { fetch, requests }
}

test("the SDK's tool runner sends the handlers' texts back as tool results", async () => {
  const { memory, store } = await tool('runner')
  const api = fakeApi([
    { command: 'view', path: '/memories' },
    { command: 'create', path: '/memories/preferences.md', file_text: 'Prefers pnpm.\n' },
    { command: 'str_replace', path: '/memories/missing.md', old_str: 'x', new_str: 'y' },
  ])
  const client = new Anthropic({ apiKey: 'test-key-not-used', fetch: api.fetch, maxRetries: 0 })
  const final = await client.beta.messages
    .toolRunner({ model: 'claude-test', max_tokens: 256, tools: [memory], messages: [{ role: 'user', content: 'Remember that I prefer pnpm.' }] })
    .runUntilDone()
  assert.equal(final.content[0].text, 'Noted.')
  assert.equal(api.requests.length, 2)
  assert.deepEqual(api.requests[0].tools, [{ type: 'memory_20250818', name: 'memory' }])
  const results = api.requests[1].messages.at(-1).content
  assert.equal(results.length, 3)
  assert.match(String(results[0].content), /^Here're the files and directories up to 2 levels deep in \/memories/)
  assert.equal(results[1].content, 'File created successfully at: /memories/preferences.md')
  assert.equal(results[1].is_error ?? false, false)
  assert.equal(results[2].is_error, true)
  assert.match(String(results[2].content), /The path \/memories\/missing\.md does not exist/)
  const stored = await store.notes({ command: 'view', path: '/memories/preferences.md', scope: 'runner' })
  assert.match(stored.text, /Prefers pnpm\./)
})

// The cases of the TypeScript SDK's tests of its own `BetaLocalFilesystemMemoryTool` (those
// that are about the tool's answers, not about files on a disk: modes and symlinks have no
// counterpart in a store), each held here to the text that tool answers with.

/** Every note of `scope` on `store` by `memories/<path>`, read through the notes operation. */
async function notesOf(store, scope) {
  const read = async (path) => (await store.notes({ command: 'view', path, scope })).text
  const notes = {}
  const walk = async (dir) => {
    const depth = dir.split('/').length
    for (const line of (await read(dir)).split('\n').slice(2)) {
      const path = line.split('\t')[1]
      if (!path.endsWith('/')) {
        const lines = (await read(path)).split('\n').slice(1)
        notes[path.slice(1)] = lines.map((numbered) => numbered.slice(numbered.indexOf('\t') + 1)).join('\n')
      } else if (path.split('/').length - depth === 3) {
        await walk(path.slice(0, -1))
      }
    }
  }
  await walk('/memories')
  return notes
}

const SDK_CASES = [
  // [what, files there first, the command, its text or `Error: ` and the error's, the notes after]
  ['create a file', {}, { command: 'create', path: '/memories/test_file.txt', file_text: 'Hello, World!' },
    'File created successfully at: /memories/test_file.txt', { 'memories/test_file.txt': 'Hello, World!' }],
  ['create in directories not there yet', {}, { command: 'create', path: '/memories/deep/nested/file.txt', file_text: 'Nested file' },
    'File created successfully at: /memories/deep/nested/file.txt', { 'memories/deep/nested/file.txt': 'Nested file' }],
  ['create where a file is', { 'existing.txt': 'Original' }, { command: 'create', path: '/memories/existing.txt', file_text: 'New' },
    'Error: File /memories/existing.txt already exists'],
  ['view a file', { 'view_test.txt': 'Line 1\nLine 2\nLine 3' }, { command: 'view', path: '/memories/view_test.txt' },
    "Here's the content of /memories/view_test.txt with line numbers:\n     1\tLine 1\n     2\tLine 2\n     3\tLine 3"],
  ['view a directory', { 'dir/file1.txt': 'File 1', 'dir/file2.txt': 'File 2' }, { command: 'view', path: '/memories/dir' },
    "Here're the files and directories up to 2 levels deep in /memories/dir, excluding hidden items and node_modules:\n" +
    '12B\t/memories/dir\n6B\t/memories/dir/file1.txt\n6B\t/memories/dir/file2.txt'],
  ['view lines 2 to 4', { 'range_test.txt': 'Line 1\nLine 2\nLine 3\nLine 4\nLine 5' }, { command: 'view', path: '/memories/range_test.txt', view_range: [2, 4] },
    "Here's the content of /memories/range_test.txt with line numbers:\n     2\tLine 2\n     3\tLine 3\n     4\tLine 4"],
  ['view a file not there', {}, { command: 'view', path: '/memories/nonexistent.txt' },
    'Error: The path /memories/nonexistent.txt does not exist. Please provide a valid path.'],
  ['replace a string', { 'replace_test.txt': 'Line 1\nOld Text\nLine 3' }, { command: 'str_replace', path: '/memories/replace_test.txt', old_str: 'Old Text', new_str: 'New Text' },
    'The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tLine 1\n     2\tNew Text\n     3\tLine 3',
    { 'memories/replace_test.txt': 'Line 1\nNew Text\nLine 3' }],
  ['replace a string not there', { 'replace_test.txt': 'Hello, World!' }, { command: 'str_replace', path: '/memories/replace_test.txt', old_str: 'NotFound', new_str: 'Python' },
    'Error: No replacement was performed, old_str `NotFound` did not appear verbatim in /memories/replace_test.txt.'],
  ['replace a string there twice', { 'replace_test.txt': 'Hello\nMiddle\nHello' }, { command: 'str_replace', path: '/memories/replace_test.txt', old_str: 'Hello', new_str: 'Hi' },
    'Error: No replacement was performed. Multiple occurrences of old_str `Hello` in lines: 1, 3. Please ensure it is unique'],
  ['replace in a file not there', {}, { command: 'str_replace', path: '/memories/nonexistent.txt', old_str: 'old', new_str: 'new' },
    'Error: The path /memories/nonexistent.txt does not exist. Please provide a valid path.'],
  ['insert after line 1', { 'insert_test.txt': 'Line 1\nLine 2' }, { command: 'insert', path: '/memories/insert_test.txt', insert_line: 1, insert_text: 'Inserted Line' },
    'The file /memories/insert_test.txt has been edited.', { 'memories/insert_test.txt': 'Line 1\nInserted Line\nLine 2' }],
  ['insert at the top', { 'insert_test.txt': 'Line 1\nLine 2' }, { command: 'insert', path: '/memories/insert_test.txt', insert_line: 0, insert_text: 'First Line' },
    'The file /memories/insert_test.txt has been edited.', { 'memories/insert_test.txt': 'First Line\nLine 1\nLine 2' }],
  ['insert at the end, adding no newline', { 'insert_test.txt': 'Line 1\nLine 2' }, { command: 'insert', path: '/memories/insert_test.txt', insert_line: 2, insert_text: 'Last Line' },
    'The file /memories/insert_test.txt has been edited.', { 'memories/insert_test.txt': 'Line 1\nLine 2\nLast Line' }],
  ['insert into a file not there', {}, { command: 'insert', path: '/memories/nonexistent.txt', insert_line: 0, insert_text: 'text' },
    'Error: The path /memories/nonexistent.txt does not exist. Please provide a valid path.'],
  ['insert past the last line', { 'insert_test.txt': 'Line 1\nLine 2' }, { command: 'insert', path: '/memories/insert_test.txt', insert_line: 10, insert_text: 'text' },
    'Error: Invalid `insert_line` parameter: 10. It should be within the range of lines of the file: [0, 2]'],
  ['delete a file', { 'delete_me.txt': 'Delete me' }, { command: 'delete', path: '/memories/delete_me.txt' },
    'Successfully deleted /memories/delete_me.txt', {}],
  ['delete a directory', { 'subdir/file.txt': 'Content' }, { command: 'delete', path: '/memories/subdir' },
    'Successfully deleted /memories/subdir', {}],
  ['delete a file not there', {}, { command: 'delete', path: '/memories/nonexistent.txt' },
    'Error: The path /memories/nonexistent.txt does not exist'],
  ['delete /memories', {}, { command: 'delete', path: '/memories' }, 'Error: Cannot delete the /memories directory itself'],
  ['rename a file', { 'old_name.txt': 'Original content' }, { command: 'rename', old_path: '/memories/old_name.txt', new_path: '/memories/new_name.txt' },
    'Successfully renamed /memories/old_name.txt to /memories/new_name.txt', { 'memories/new_name.txt': 'Original content' }],
  ['rename into new directories', { 'file.txt': 'Content' }, { command: 'rename', old_path: '/memories/file.txt', new_path: '/memories/nested/dir/file.txt' },
    'Successfully renamed /memories/file.txt to /memories/nested/dir/file.txt', { 'memories/nested/dir/file.txt': 'Content' }],
  ['rename a file not there', {}, { command: 'rename', old_path: '/memories/nonexistent.txt', new_path: '/memories/new.txt' },
    'Error: The path /memories/nonexistent.txt does not exist'],
  ['rename onto a file', { 'file1.txt': 'Content 1', 'file2.txt': 'Content 2' }, { command: 'rename', old_path: '/memories/file1.txt', new_path: '/memories/file2.txt' },
    'Error: The destination /memories/file2.txt already exists'],
  ['a path outside /memories', {}, { command: 'create', path: '/invalid/path.txt', file_text: 'Invalid' },
    'Error: Path must start with /memories, got: /invalid/path.txt', {}],
  ['a path climbing out of /memories', {}, { command: 'create', path: '/memories/../../../etc/passwd', file_text: 'Escape attempt' },
    'Error: Path /memories/../../../etc/passwd would escape /memories directory', {}],
  ['a path climbing into a sibling of /memories', {}, { command: 'view', path: '/memories/../memories_backup/secret.txt' },
    'Error: Path /memories/../memories_backup/secret.txt would escape /memories directory'],
]

for (const [what, files, command, expected, after] of SDK_CASES) {
  test(`as the TypeScript SDK's own tool: ${what}`, async () => {
    const store = await Store.open(':memory:')
    const handlers = memoryToolHandlers(store, { scope: 'sdk' })
    for (const [path, file_text] of Object.entries(files)) {
      await handlers.create({ command: 'create', path: `/memories/${path}`, file_text })
    }
    const answer = await handlers[command.command](command).catch((error) => `Error: ${error.message}`)
    assert.equal(answer, expected)
    if (after) assert.deepEqual(await notesOf(store, 'sdk'), after)
  })
}

test("as the TypeScript SDK's own tool: a file of a million lines is too long to view", async () => {
  const store = await Store.open(':memory:')
  const handlers = memoryToolHandlers(store, { scope: 'sdk', maxNoteBytes: 8 * 1024 * 1024 })
  await handlers.create({ command: 'create', path: '/memories/huge.txt', file_text: Array(1000000).fill('line').join('\n') })
  await assert.rejects(handlers.view({ command: 'view', path: '/memories/huge.txt' }), {
    message: 'File /memories/huge.txt has too many lines (1000000). Maximum is 999,999 lines.',
  })
})

test('the note limit is the caller’s to set, and a note past it is refused naming it', async () => {
  const store = await Store.open(':memory:')
  const big = 'x'.repeat(300 * 1024)
  await assert.rejects(memoryToolHandlers(store).create({ command: 'create', path: '/memories/big.md', file_text: big }), {
    message: 'File /memories/big.md would be 307200 bytes, over the limit of 262144 bytes per file (max_note_bytes)',
  })
  const roomy = memoryToolHandlers(store, { maxNoteBytes: 1024 * 1024 })
  assert.equal(await roomy.create({ command: 'create', path: '/memories/big.md', file_text: big }), 'File created successfully at: /memories/big.md')
  assert.throws(() => memoryToolHandlers(store, { maxNoteBytes: '1M' }), { kind: 'invalid_input', input: 'options.maxNoteBytes' })
  await assert.rejects(memoryToolHandlers(store, { maxNoteBytes: 0 }).view({ command: 'view', path: '/memories' }), { kind: 'invalid_input' })
})

test('each version names the model, the handlers\' session and the package; the model cannot name another writer', async () => {
  const store = await Store.open(':memory:')
  const memory = betaMemoryTool(memoryToolHandlers(store, { scope: 's', session: 'run-12' }))
  await memory.run({ command: 'create', path: '/memories/plan.md', file_text: 'step one' })
  await memory.run({ command: 'str_replace', path: '/memories/plan.md', old_str: 'one', new_str: 'two', source: 'user' })
  const { versions } = await store.noteHistory({ path: '/memories/plan.md', scope: 's' })
  assert.deepEqual(versions.map((v) => v.provenance.source), ['model', 'model'])
  assert.deepEqual([...new Set(versions.map((v) => v.provenance.session))], ['run-12'])
  assert.deepEqual([...new Set(versions.map((v) => v.provenance.client))], ['node'])
  assert.equal((await store.noteForgetBy({ session: 'run-12' })).notes, 1)
  assert.throws(() => memoryToolHandlers(store, { session: 12 }), InvalidInputError)
})
