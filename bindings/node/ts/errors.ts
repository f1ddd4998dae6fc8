// The mapping from the native addon's failures (whose message is the contract's error body)
// to the package's errors, the generated class of each kind (`generated/errors.ts`).

import { AgentMemoryError } from './agent-memory-error.js'
import { InvalidInputError, errorClasses } from './generated/errors.js'
import type { ErrorKind } from './generated/schemas.js'

/** The contract's error body, `{kind, message, input}`, as the addon sends it. */
interface ErrorBody {
  kind: string
  message: string
  input?: string | null
}

/** The error of a contract error body. */
export function fromBody(body: ErrorBody): AgentMemoryError {
  const kind = body.kind as ErrorKind
  const cls = Object.hasOwn(errorClasses, kind) ? errorClasses[kind] : AgentMemoryError
  return new cls(body.message, body.input ?? undefined, kind)
}

/** The native addon's failure (its message is the contract's error body) as our class. */
export function fromNative(error: unknown): AgentMemoryError {
  if (error instanceof AgentMemoryError) return error
  const failure = error as { message?: unknown; code?: unknown } | null | undefined
  const text = failure && typeof failure.message === 'string' ? failure.message : String(error)
  if (text.startsWith('{')) {
    try {
      const body: unknown = JSON.parse(text)
      if (isBody(body)) return fromBody(body)
    } catch {
      // Not a body: fall through to a plain failure.
    }
  }
  // napi's own conversion errors (a value it cannot take) are bad input.
  if (failure && failure.code === 'InvalidArg') return new InvalidInputError(text, 'input')
  return new AgentMemoryError(text)
}

function isBody(value: unknown): value is ErrorBody {
  if (value === null || typeof value !== 'object') return false
  const body = value as Record<string, unknown>
  return typeof body.kind === 'string' && typeof body.message === 'string'
}
