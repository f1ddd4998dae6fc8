// Shared by the package's tests: temporary databases and the inputs every memory is driven with.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const folders = []
process.on('exit', () => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true })
})

/** A fresh folder for one test's files, removed when the test process ends. */
export function tempFolder(prefix = 'agent-memory-') {
  const folder = mkdtempSync(join(tmpdir(), prefix))
  folders.push(folder)
  return folder
}

/** The databases the memories are tested on: a file, memory, and PostgreSQL when configured. */
export function databases() {
  const list = [
    ['a SQLite file', () => join(tempFolder(), 'memory.db')],
    ['SQLite in memory', () => ':memory:'],
  ]
  const url = process.env.AGENT_MEMORY_TEST_POSTGRES
  if (url) {
    list.push([
      'PostgreSQL',
      () => {
        const schema = `node_${process.pid}_${Math.floor(Math.random() * 1e9)}`
        return `${url}${url.includes('?') ? '&' : '?'}schema=${schema}`
      },
    ])
  }
  return list
}

export const EPISODE = {
  fingerprint: { problem_topology: 'flaky_test', affected_layer: 'ci' },
  trajectory: ['read_logs', 'pin_seed', 'run_tests'],
  outcome: { success: true },
}

export const RUN = {
  goal: 'Add Smart Watch X to the cart',
  start_url: 'https://shop.example.com/',
  success: true,
  outcome: 'the watch is in the cart',
  turns: [
    { url: 'https://shop.example.com/', verified: true, duration_ms: 800, action: { action: 'type', selector: '#search', text: 'Smart Watch X' } },
    { url: 'https://shop.example.com/search?q=watch', verified: true, duration_ms: 600, action: { action: 'click', selector: '#add-to-cart' } },
  ],
  selectors: [{ element: 'search box', selector: '#search' }],
}

export const EVENTS = [
  { type: 'session_started', session: 'node-session', started_at: 1767225600000 },
  { type: 'user_message', text: 'Make the tests pass.' },
  {
    type: 'assistant_turn',
    text: 'Fixed the parser; one test still fails.',
    memory: { files_changed: ['src/parser.rs'], failed_commands: [{ command: 'cargo test', exit_code: 101 }] },
  },
]

/** A value the agent marks sensitive: it must never come back from the memory. */
export const CANARY = 'hunter2-node-canary'

export const LOGS = [
  {
    toolName: 'merchantFactory_loadAccount',
    parameters: { account: 'tea-house' },
    successful: true,
    durationMs: 40,
    timestamp: 1000,
    memorySnapshot: [
      { key: 'merchant_email', value: 'shop+tea@example.com', writtenBy: 'merchantFactory_loadAccount', writtenAt: 1000, existedBefore: false },
      { key: 'merchant_password', value: CANARY, sensitive: true },
    ],
  },
  {
    toolName: 'signIn',
    parameters: { email: 'shop+tea@example.com', password: CANARY },
    successful: true,
    durationMs: 900,
    timestamp: 2000,
    memorySnapshot: [
      { key: 'merchant_email', value: 'shop+tea@example.com', writtenBy: 'merchantFactory_loadAccount', writtenAt: 1000 },
      { key: 'merchant_password', sensitive: true },
    ],
  },
]
