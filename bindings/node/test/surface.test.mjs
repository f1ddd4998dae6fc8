// The package's surface is the contract's: every operation of the addon's operation table is
// a `Store` method at the table's Node name (a Promise and a `...Sync` twin), no method is
// left without its operation, and every kind of error has its class, from `import` and
// `require` alike.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import * as esm from 'durable-agent-memory'

const cjs = createRequire(import.meta.url)('durable-agent-memory')

/** The object holding an operation's method, and the method, from its Node name. */
function place(store, node) {
  const parts = node.split('.')
  assert.ok(parts.length === 1 || parts.length === 2, node)
  return parts.length === 1 ? [store, parts[0]] : [store[parts[0]], parts[1]]
}

test('every operation is a Store method at its Node name, sync and async', async () => {
  const ops = esm.operations()
  assert.ok(ops.length >= 23, String(ops.length))
  const store = esm.Store.openSync(':memory:')
  const expected = new Set()
  for (const op of ops) {
    assert.ok(['reads', 'writes', 'deletes'].includes(op.effect), op.name)
    assert.ok(op.description.length > 20, op.name)
    assert.equal(typeof op.takesInput, 'boolean', op.name)
    const [owner, method] = place(store, op.node)
    assert.equal(typeof owner?.[method], 'function', `${op.name} as ${op.node}`)
    assert.equal(typeof owner?.[`${method}Sync`], 'function', `${op.name} as ${op.node}Sync`)
    expected.add(op.node).add(`${op.node}Sync`)
  }
  // Each method is its operation: an operation without input answers through it (a fresh
  // run id is another each time, so only its shape is compared).
  for (const op of ops.filter((op) => !op.takesInput && !['check', 'browser_run_id'].includes(op.name))) {
    const [owner, method] = place(store, op.node)
    assert.deepEqual(await owner[method](), owner[`${method}Sync`]({}), op.name)
    assert.deepEqual(await store.call(op.name), owner[`${method}Sync`](), op.name)
  }
  for (const fresh of [await store.browser.runId(), store.browser.runIdSync({}), await store.call('browser_run_id')]) {
    assert.match(fresh.run_id, /^run_\d+_[0-9a-z]{6}$/)
  }
  // And nothing else: every function the store holds is an operation's, or the store's own.
  const found = []
  for (const [key, value] of Object.entries(store)) {
    if (typeof value === 'function') found.push(key)
    else for (const [method, fn] of Object.entries(value)) if (typeof fn === 'function') found.push(`${key}.${method}`)
  }
  assert.deepEqual(found.sort(), [...expected].sort())
  store.close()
})

test('every error kind has its class, the same from import and require', () => {
  const kinds = esm.errorKinds()
  assert.ok(kinds.includes('not_found') && kinds.includes('error'), kinds.join(' '))
  assert.deepEqual(Object.keys(esm.errorClasses).sort(), [...kinds].sort())
  for (const kind of kinds) {
    const cls = esm.errorClasses[kind]
    const name = kind === 'error' ? 'AgentMemoryError' : `${kind.split('_').map((w) => w[0].toUpperCase() + w.slice(1)).join('')}Error`
    assert.equal(cls.name, name, kind)
    assert.equal(esm[name], cls, `${name} from import`)
    assert.equal(cjs[name], cls, `${name} from require`)
    assert.equal(cls.kind, kind)
    const error = new cls('m', 'i')
    assert.ok(error instanceof esm.AgentMemoryError && error instanceof Error, name)
    assert.equal(error.kind, kind)
    assert.equal(error.name, name)
    assert.equal(error.input, 'i')
    assert.equal(error.message, 'm')
  }
  assert.ok(Object.isFrozen(esm.errorClasses))
})
