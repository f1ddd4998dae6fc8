// The ES module and CommonJS entry points give the same objects; the addon is the packed one.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import * as esm from 'durable-agent-memory'

const require = createRequire(import.meta.url)
const cjs = require('durable-agent-memory')

test('import and require give the same classes', () => {
  for (const name of ['Store', 'operations', 'errorKinds', 'runCli', 'memoryToolHandlers', 'AgentMemoryError', 'UsageError', 'InvalidInputError', 'NotFoundError', 'ConflictError', 'CorruptError', 'IoError', 'DatabaseError']) {
    assert.equal(typeof esm[name], 'function', name)
    assert.equal(esm[name], cjs[name], name)
  }
  assert.equal(esm.errorClasses, cjs.errorClasses)
  // The default export is the CommonJS module itself, as a CommonJS package's always is.
  assert.equal(esm.default, cjs)
})

test('the internals stay inside the package', () => {
  for (const name of ['fromNative', 'fromBody', 'checkJson', 'METHODS']) {
    assert.equal(esm[name], undefined, name)
    assert.equal(cjs[name], undefined, name)
  }
  assert.throws(() => require('durable-agent-memory/lib/errors.js'), { code: 'ERR_PACKAGE_PATH_NOT_EXPORTED' })
})

test('the addon is loaded from the installed package, not the sources', () => {
  const resolved = require.resolve('durable-agent-memory')
  assert.match(resolved, /node_modules[\\/]durable-agent-memory[\\/]/)
})
