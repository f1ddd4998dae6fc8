// The package's `agent-memory` command: the command line and the MCP server, in-process.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { tempFolder } from './helpers.mjs'

const require = createRequire(import.meta.url)
const packageJson = require.resolve('durable-agent-memory/package.json')
const bin = join(dirname(packageJson), require('durable-agent-memory/package.json').bin['agent-memory'])
// npm links the command into the project's node_modules/.bin, as `npx agent-memory` runs it.
const linked = join(dirname(dirname(dirname(packageJson))), 'node_modules', '.bin', 'agent-memory')

function run(args, options = {}) {
  return spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', ...options })
}

test('the command is linked into node_modules/.bin', () => {
  assert.ok(existsSync(linked), linked)
})

test('npx durable-agent-memory runs the command', () => {
  const project = dirname(dirname(dirname(packageJson)))
  const npx = process.platform === 'win32' ? 'npx.cmd' : 'npx'
  const version = spawnSync(npx, ['--no-install', 'durable-agent-memory', '--version'], { cwd: project, encoding: 'utf8' })
  assert.equal(version.status, 0, version.stderr)
  assert.match(version.stdout, /^agent-memory \d+\.\d+\.\d+/)
})

test('it writes and reads a database, with exit codes and JSON errors', () => {
  const db = join(tempFolder(), 'cli.db')
  const help = run(['--help'])
  assert.equal(help.status, 0, help.stderr)
  assert.match(help.stdout, /agent-memory/)
  // A read of a database that does not exist yet answers empty, with a note naming it.
  const listed = run(['--db', db, '--json', 'list'])
  assert.equal(listed.status, 0, listed.stderr)
  assert.deepEqual(JSON.parse(listed.stdout).partitions, [])
  assert.match(listed.stderr, /does not exist yet/)
  const stats = run(['--db', db, '--json', 'stats'])
  assert.equal(stats.status, 1)
  assert.equal(JSON.parse(stats.stderr).error.kind, 'not_found')
  const started = run(['--db', db, '--json', 'browser', 'run', 'start', '--file', '-'], {
    input: JSON.stringify({ goal: 'g', domain: 'example.com', start_url: 'https://example.com/', run_id: 'run-cli' }),
  })
  assert.equal(started.status, 0, started.stderr)
  assert.equal(JSON.parse(started.stdout).status, 'running')
  const usage = run(['--db', db, 'no-such-command'])
  assert.equal(usage.status, 2)
})

test('`agent-memory mcp` answers an MCP client over stdio', async () => {
  const db = join(tempFolder(), 'mcp.db')
  const server = spawn(process.execPath, [linked, '--db', db, 'mcp'], { stdio: ['pipe', 'pipe', 'inherit'] })
  const replies = []
  let buffer = ''
  const waiters = []
  server.stdout.setEncoding('utf8')
  server.stdout.on('data', (chunk) => {
    buffer += chunk
    let newline
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, newline).trim()
      buffer = buffer.slice(newline + 1)
      if (line) replies.push(JSON.parse(line))
      waiters.splice(0).forEach((w) => w())
    }
  })
  const send = (message) => server.stdin.write(JSON.stringify(message) + '\n')
  const reply = async (id) => {
    for (;;) {
      const found = replies.find((r) => r.id === id)
      if (found) return found
      await new Promise((resolve) => waiters.push(resolve))
    }
  }
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'node-test', version: '0' } } })
  const initialized = await reply(1)
  assert.ok(initialized.result.serverInfo, JSON.stringify(initialized))
  send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  send({ jsonrpc: '2.0', id: 2, method: 'tools/list' })
  const tools = (await reply(2)).result.tools.map((t) => t.name)
  assert.ok(tools.includes('browser_context') && tools.includes('memory_list'), tools.join(','))
  send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'memory_list', arguments: {} } })
  const listed = await reply(3)
  assert.equal(listed.result.isError ?? false, false, JSON.stringify(listed))
  const exited = new Promise((resolve) => server.on('exit', resolve))
  server.stdin.end()
  assert.equal(await exited, 0)
})
