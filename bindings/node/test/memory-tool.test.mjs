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
