// The ES module and CommonJS entry points give the same objects; the addon is the packed one.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import * as esm from 'durable-agent-memory'

const require = createRequire(import.meta.url)

test('import and require give the same classes', () => {
  const cjs = require('durable-agent-memory')
  for (const name of ['Store', 'operations', 'runCli', 'AgentMemoryError', 'UsageError', 'InvalidInputError', 'NotFoundError', 'ConflictError', 'CorruptError', 'IoError', 'DatabaseError']) {
    assert.equal(typeof esm[name], 'function', name)
    assert.equal(esm[name], cjs[name], name)
  }
})

test('operations lists every operation of the contract, each with a Store method', () => {
  const ops = esm.operations()
  const store = esm.Store.openSync(':memory:')
  assert.ok(ops.length >= 21, String(ops.length))
  for (const op of ops) {
    assert.ok(['reads', 'writes', 'deletes'].includes(op.effect), op.name)
    assert.ok(op.description.length > 20, op.name)
    const [group, ...rest] = op.name.split('_')
    // A one-word operation (`check`, `notes`) is a method of the store itself.
    const method = rest.length === 0 ? group : rest.map((w, i) => (i === 0 ? w : w[0].toUpperCase() + w.slice(1))).join('')
    const owner = group === 'memory' || rest.length === 0 ? store : store[group]
    assert.equal(typeof owner?.[method], 'function', `${op.name} as ${group}.${method}`)
    assert.equal(typeof owner?.[`${method}Sync`], 'function', `${op.name} as ${group}.${method}Sync`)
  }
})

test('the addon is loaded from the installed package, not the sources', () => {
  const resolved = require.resolve('durable-agent-memory')
  assert.match(resolved, /node_modules[\\/]durable-agent-memory[\\/]/)
})
