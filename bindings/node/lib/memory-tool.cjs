'use strict'
// Anthropic's memory tool (`memory_20250818`) on a store's notes: the handlers the Anthropic
// TypeScript SDK's `betaMemoryTool` helper takes (`@anthropic-ai/sdk/helpers/beta/memory`),
// one per command. Each runs the command through the store's `notes` operation and resolves
// with the text the tool documents; a failure rejects with an `Error` whose message is the
// tool's error text (the SDK's tool runner sends it back to the model as the tool's error).
// The SDK is not needed to load this: the handlers are plain async functions.

const { InvalidInputError, wellFormed } = require('./errors.cjs')

const COMMANDS = ['view', 'create', 'str_replace', 'insert', 'delete', 'rename']

/**
 * The memory tool's handlers on `store`'s notes of `options.scope` (default `default`), with
 * `options.secrets` (name to value) never stored or shown.
 */
function memoryToolHandlers(store, options = {}) {
  if (store === null || typeof store !== 'object' || typeof store.notes !== 'function') {
    throw new InvalidInputError('store must be a Store (from Store.open or Store.openSync)', 'store')
  }
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidInputError('options must be an object ({ scope, secrets })', 'options')
  }
  const { scope, secrets } = options
  if (scope !== undefined && (typeof scope !== 'string' || scope.length === 0 || !wellFormed(scope))) {
    throw new InvalidInputError('options.scope must be a non-empty string', 'options.scope')
  }
  const handlers = {}
  for (const name of COMMANDS) {
    handlers[name] = async (command) => {
      if (command === null || typeof command !== 'object' || Array.isArray(command)) {
        throw new InvalidInputError(`the ${name} command must be an object`, 'command')
      }
      const { text } = await store.notes({ ...command, command: name, scope, secrets })
      return text
    }
  }
  return handlers
}

module.exports = { memoryToolHandlers }
