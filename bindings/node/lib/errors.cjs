'use strict'
// The package's errors: one `Error` subclass per contract kind, and the mapping from the
// native addon's failures (whose message is the contract's error body) to them.

/** A failure of the memory: `kind` says which, `input` names what it is about. */
class AgentMemoryError extends Error {
  constructor(message, input, kind) {
    super(message)
    this.name = new.target.name
    this.kind = kind ?? new.target.kind ?? 'error'
    this.input = input ?? undefined
  }
}
AgentMemoryError.kind = 'error'

function errorClass(name, kind) {
  const cls = { [name]: class extends AgentMemoryError {} }[name]
  cls.kind = kind
  return cls
}

const UsageError = errorClass('UsageError', 'usage')
const InvalidInputError = errorClass('InvalidInputError', 'invalid_input')
const NotFoundError = errorClass('NotFoundError', 'not_found')
const ConflictError = errorClass('ConflictError', 'conflict')
const CorruptError = errorClass('CorruptError', 'corrupt')
const IoError = errorClass('IoError', 'io')
const DatabaseError = errorClass('DatabaseError', 'database')

const ERROR_CLASSES = {
  usage: UsageError,
  invalid_input: InvalidInputError,
  not_found: NotFoundError,
  conflict: ConflictError,
  corrupt: CorruptError,
  io: IoError,
  database: DatabaseError,
  error: AgentMemoryError,
}

/** The error for a contract error body `{kind, message, input}`. */
function fromBody(body) {
  const cls = ERROR_CLASSES[body.kind] ?? AgentMemoryError
  return new cls(body.message, body.input ?? undefined, body.kind)
}

/** The native addon's failure (its message is the contract's error body) as our class. */
function fromNative(error) {
  if (error instanceof AgentMemoryError) return error
  const text = error && typeof error.message === 'string' ? error.message : String(error)
  if (text.startsWith('{')) {
    try {
      const body = JSON.parse(text)
      if (body && typeof body.kind === 'string') return fromBody(body)
    } catch {
      // Not a body: fall through to a plain failure.
    }
  }
  // napi's own conversion errors (a value it cannot take) are bad input.
  if (error && error.code === 'InvalidArg') return new InvalidInputError(text, 'input')
  return new AgentMemoryError(text)
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Whether `text` is well-formed UTF-16 (no lone surrogate), on Node 18 too. */
function wellFormed(text) {
  return typeof text.isWellFormed === 'function' ? text.isWellFormed() : !LONE_SURROGATE.test(text)
}

module.exports = {
  wellFormed,
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
}
