// Where the addon comes from: one package per platform, and a clear error where none fits.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

const require = createRequire(import.meta.url)
const root = dirname(require.resolve('durable-agent-memory/package.json'))
const pkg = require('durable-agent-memory/package.json')
const { PUBLISHED_PLATFORMS, platformName } = require(join(root, 'lib', 'native-binding.js'))

/** napi-rs's name of a Rust target: `x86_64-unknown-linux-gnu` is `linux-x64-gnu`. */
function napiName(triple) {
  const [arch, , os, abi] = triple.split('-')
  const cpu = { x86_64: 'x64', aarch64: 'arm64' }[arch]
  const platform = { linux: 'linux', darwin: 'darwin', windows: 'win32' }[os]
  return [platform, cpu, abi].filter(Boolean).join('-')
}

test('the error names the published platforms, which are the package targets', () => {
  assert.deepEqual([...PUBLISHED_PLATFORMS].sort(), pkg.napi.targets.map(napiName).sort())
})

test('this machine is one of the published platforms', () => {
  assert.ok(PUBLISHED_PLATFORMS.includes(platformName()), platformName())
})

/** Requires the package in a child whose `process.arch` says `arch`; answers its output. */
function loadAs(arch) {
  const script = `
    Object.defineProperty(process, 'arch', { value: ${JSON.stringify(arch)} })
    try { require('durable-agent-memory'); console.log('loaded') }
    catch (error) { console.log(JSON.stringify({ message: error.message, cause: String(error.cause) })) }`
  const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', cwd: dirname(dirname(root)) })
  assert.equal(child.status, 0, child.stderr)
  return child.stdout.trim()
}

test('a platform with no binary gets an error naming it and how to build from source', () => {
  const { message, cause } = JSON.parse(loadAs('riscv64'))
  assert.match(message, /on this platform \(linux-riscv64-gnu, Node\.js v/)
  assert.match(message, /Binaries are published for linux-x64-gnu, linux-arm64-gnu/)
  assert.match(message, /install Rust \(https:\/\/rustup\.rs\)/)
  assert.match(message, /npm install <checkout>\/bindings\/node/)
  assert.doesNotMatch(message, /npm has a bug/)
  assert.match(cause, /native binding/)
})

test('a published platform whose package is missing is told which package to install', () => {
  const { message } = JSON.parse(loadAs('arm64'))
  assert.match(message, /on this platform \(linux-arm64-gnu/)
  assert.match(message, /npm install durable-agent-memory-linux-arm64-gnu/)
})
