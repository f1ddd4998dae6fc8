'use strict'
// durable-agent-memory: the JSON contract of agent-memory as a Node.js API.
//
// A thin door: `Store` methods check that an input is plain JSON (naming the offending
// argument when it is not), hand it to the native addon, which runs the contract's operation
// off the JavaScript thread, and turn a failure into the `Error` subclass of its kind. Every
// rule of the memory lives in the Rust crates under the addon.

const native = require('../native.js')
const path = require('node:path')

const {
  AgentMemoryError,
  UsageError,
  InvalidInputError,
  NotFoundError,
  ConflictError,
  CorruptError,
  IoError,
  DatabaseError,
  fromBody,
  fromNative,
  wellFormed,
} = require('./errors.cjs')

const MAX_DEPTH = 128

/**
 * Throws an `InvalidInputError` naming the first part of `root` (called `name`) that is not
 * plain JSON: a lone surrogate, a number that is not finite, `undefined` in an array, a
 * bigint, function, symbol, class instance or cycle. `undefined` properties count as absent,
 * as in `JSON.stringify`.
 *
 * One walk on every call, so it keeps the path as a stack of steps and spells it out only for
 * the error: a plain input allocates nothing per value.
 */
function checkJson(root, name) {
  const steps = []
  const parents = []
  const where = () => {
    let text = name
    for (let i = 0; i < steps.length; i++) text += typeof steps[i] === 'number' ? `[${steps[i]}]` : `.${steps[i]}`
    return text
  }
  const fail = (message) => {
    const at = where()
    throw new InvalidInputError(message(at), at)
  }
  const visit = (value) => {
    switch (typeof value) {
      case 'string':
        if (!wellFormed(value)) fail((at) => `${at} holds a lone UTF-16 surrogate, which is no text`)
        return
      case 'number':
        if (!Number.isFinite(value)) fail((at) => `${at} must be a finite number (got ${value})`)
        return
      case 'boolean':
        return
      case 'undefined':
        fail((at) => `${at} is undefined`)
        return
      case 'object':
        break
      default:
        fail((at) => `${at} must be JSON (got a ${typeof value})`)
    }
    if (value === null) return
    if (parents.length >= MAX_DEPTH) fail((at) => `${at} is nested deeper than ${MAX_DEPTH} levels`)
    // The objects above this one: a short list, cheaper to scan than a set is to keep.
    if (parents.includes(value)) fail((at) => `${at} refers to itself (a cycle)`)
    parents.push(value)
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        steps.push(i)
        visit(value[i])
        steps.pop()
      }
    } else {
      const proto = Object.getPrototypeOf(value)
      if (proto !== Object.prototype && proto !== null) {
        const kind = value.constructor && value.constructor.name ? value.constructor.name : 'object'
        fail((at) => `${at} must be a plain object or array (got a ${kind})`)
      }
      for (const key of Object.keys(value)) {
        const item = value[key]
        if (item === undefined) continue
        if (!wellFormed(key)) fail((at) => `a key in ${at} holds a lone UTF-16 surrogate`)
        steps.push(key)
        visit(item)
        steps.pop()
      }
    }
    parents.pop()
  }
  visit(root)
}

/**
 * Whether `value` is plain JSON, as `checkJson` decides it, at the least cost: no path, no
 * error, and cycles found by the depth they reach. Every call's input passes here; only an
 * input that fails goes on to `checkJson`, which names what is wrong.
 */
function plainJson(value, depth) {
  switch (typeof value) {
    case 'string':
      return wellFormed(value)
    case 'number':
      return Number.isFinite(value)
    case 'boolean':
      return true
    case 'object': {
      if (value === null) return true
      if (depth >= MAX_DEPTH) return false
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (!plainJson(value[i], depth + 1)) return false
        return true
      }
      const proto = Object.getPrototypeOf(value)
      if (proto !== Object.prototype && proto !== null) return false
      for (const key in value) {
        const item = value[key]
        if (item === undefined) continue
        if (!wellFormed(key) || !plainJson(item, depth + 1)) return false
      }
      return true
    }
    default:
      return false
  }
}

/** `input` as the operation takes it, or an error naming the argument. */
function operationInput(operation, input, takesInput) {
  if (!takesInput) {
    if (input === undefined || input === null) return null
    if (typeof input === 'object' && !Array.isArray(input) && Object.keys(input).length === 0) return null
    throw new InvalidInputError(`${operation} takes no input`, 'input')
  }
  if (input === undefined || input === null || typeof input !== 'object' || Array.isArray(input)) {
    const got = input === null ? 'null' : Array.isArray(input) ? 'an array' : typeof input
    throw new InvalidInputError(`${operation} takes an object as its input (got ${got})`, 'input')
  }
  if (!plainJson(input, 0)) checkJson(input, 'input')
  // Plain JSON now, but for `undefined` properties, which JSON.stringify leaves out.
  return input
}

/** `now` as milliseconds since the epoch: a `Date`, an RFC 3339 string or a number. */
function nowMillis(now) {
  if (now === undefined || now === null) return undefined
  const ms = now instanceof Date ? now.getTime() : typeof now === 'string' ? Date.parse(now) : now
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms)) {
    throw new InvalidInputError('options.now must be a Date, an RFC 3339 time or milliseconds since the epoch', 'options.now')
  }
  return ms
}

function checkDatabase(db) {
  if (typeof db !== 'string' || db.length === 0) {
    throw new InvalidInputError(
      `db must be a SQLite file's path, ":memory:" or a postgres:// URL (got ${db === '' ? 'an empty string' : typeof db})`,
      'db',
    )
  }
  if (!wellFormed(db) || db.includes('\0')) throw new InvalidInputError('db holds a lone surrogate or a NUL character', 'db')
}

function checkOptions(options) {
  if (options === undefined || options === null) return {}
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidInputError(`options must be an object (got ${Array.isArray(options) ? 'an array' : typeof options})`, 'options')
  }
  return options
}

/**
 * The operations, by group and method: `[group, method, operation, takesInput]`. `group`
 * null puts the method on the store itself.
 */
const METHODS = [
  ['trajectory', 'record', 'trajectory_record', true],
  ['trajectory', 'crystallize', 'trajectory_crystallize', true],
  ['trajectory', 'recall', 'trajectory_recall', true],
  ['trajectory', 'patterns', 'trajectory_patterns', true],
  ['browser', 'recordRun', 'browser_record_run', true],
  ['browser', 'context', 'browser_context', true],
  ['browser', 'runs', 'browser_runs', true],
  ['browser', 'resume', 'browser_resume', true],
  ['browser', 'fork', 'browser_fork', true],
  ['browser', 'runStart', 'browser_run_start', true],
  ['browser', 'runUpdate', 'browser_run_update', true],
  ['browser', 'runComplete', 'browser_run_complete', true],
  ['turns', 'append', 'turns_append', true],
  ['turns', 'view', 'turns_view', true],
  ['recording', 'append', 'recording_append', true],
  ['recording', 'templatize', 'recording_templatize', true],
  ['recording', 'lint', 'recording_lint', true],
  ['recording', 'nextCall', 'recording_next_call', true],
  [null, 'list', 'memory_list', false],
  [null, 'forget', 'memory_forget', true],
  [null, 'stats', 'memory_stats', false],
  [null, 'check', 'check', false],
  [null, 'notes', 'notes', true],
]


/** One open database: a SQLite file, a private in-memory database or PostgreSQL. */
class Store {
  #native
  #db

  /** Use `Store.open` or `Store.openSync`. */
  constructor(nativeStore, db) {
    if (!(nativeStore instanceof native.NativeStore)) {
      throw new UsageError('open a store with Store.open(db) or Store.openSync(db)', 'db')
    }
    this.#native = nativeStore
    this.#db = db
    for (const [group, method, operation, takesInput] of METHODS) {
      const target = group === null ? this : (this[group] ??= {})
      target[method] = (input) => this.#call(operation, input, takesInput)
      target[`${method}Sync`] = (input) => this.#callSync(operation, input, takesInput)
    }
  }

  /**
   * Opens (creating if needed) `db`, off the JavaScript thread: a SQLite file's path,
   * `":memory:"` or a `postgres://` URL. `options.now` fixes "now" for every call.
   */
  static async open(db, options) {
    checkDatabase(db)
    const now = nowMillis(checkOptions(options).now)
    try {
      return new Store(await native.open(db, now), db)
    } catch (error) {
      throw fromNative(error)
    }
  }

  /** `Store.open` on the calling thread. */
  static openSync(db, options) {
    checkDatabase(db)
    const now = nowMillis(checkOptions(options).now)
    try {
      return new Store(native.NativeStore.openSync(db, now), db)
    } catch (error) {
      throw fromNative(error)
    }
  }

  /** The database, as messages show it (a URL without its password). */
  get location() {
    return this.#native.location
  }

  /** Whether `close` was called. */
  get closed() {
    return this.#native.closed
  }

  /** Closes the store; calls in flight finish, later ones fail with a `UsageError`. */
  close() {
    this.#native.close()
  }

  /** Runs the contract operation `name` (as in `operations()`) with its input. */
  async call(name, input) {
    const [operation, takesInput] = this.#named(name)
    return this.#call(operation, input, takesInput)
  }

  /** `call` on the calling thread. */
  callSync(name, input) {
    const [operation, takesInput] = this.#named(name)
    return this.#callSync(operation, input, takesInput)
  }

  #named(name) {
    const found = METHODS.find((m) => m[2] === name)
    if (!found) throw new UsageError(`no operation named ${JSON.stringify(name)}`, 'name')
    return [found[2], found[3]]
  }

  async #call(operation, input, takesInput) {
    const value = operationInput(operation, input, takesInput)
    let out
    try {
      // As `#callSync`: the checked input crosses as JSON text, the output comes back as text.
      out = await this.#native.callJson(operation, JSON.stringify(value))
    } catch (error) {
      throw fromNative(error)
    }
    return typeof out === 'string' ? JSON.parse(out) : out
  }

  #callSync(operation, input, takesInput) {
    const value = operationInput(operation, input, takesInput)
    let out
    try {
      // The checked input is plain JSON: its text crosses in one string, and the output
      // comes back as text too unless parsing it would not make the same value.
      out = this.#native.callJsonSync(operation, JSON.stringify(value))
    } catch (error) {
      throw fromNative(error)
    }
    return typeof out === 'string' ? JSON.parse(out) : out
  }
}

/** Every operation of the contract: name, effect, description, output schema, whether it takes input. */
function operations() {
  return native.operations()
}

/**
 * Runs the `agent-memory` command line in this process on `args` (without the program's
 * name) and returns its exit status. It blocks until the command ends.
 */
function runCli(args) {
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string' && wellFormed(a))) {
    throw new InvalidInputError('args must be an array of strings', 'args')
  }
  return native.runCli(args)
}

const { memoryToolHandlers } = require('./memory-tool.cjs')

module.exports = {
  Store,
  memoryToolHandlers,
  operations,
  runCli,
  AgentMemoryError,
  UsageError,
  InvalidInputError,
  NotFoundError,
  ConflictError,
  CorruptError,
  IoError,
  DatabaseError,
}
