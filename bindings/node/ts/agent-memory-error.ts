// The base of the package's errors; the subclass of each kind of the contract's errors is
// generated (`generated/errors.ts`).

import type { ErrorKind } from './generated/schemas.js'

/** A failure of the memory: `kind` says which, `input` names what it is about. */
export class AgentMemoryError extends Error {
  /** The kind of error every instance of this class is (`error`: the catch-all). */
  static readonly kind: ErrorKind = 'error'
  /** What kind of failure it is: a stable word a program can branch on. */
  readonly kind: ErrorKind
  /** What the failure is about (a name, or the place in the input that does not fit). */
  readonly input: string | undefined

  constructor(message: string, input?: string, kind?: ErrorKind) {
    super(message)
    this.name = new.target.name
    this.kind = kind ?? new.target.kind
    this.input = input ?? undefined
  }
}
