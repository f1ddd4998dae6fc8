// durable-agent-memory: the JSON contract of agent-memory as a Node.js API.
//
// A thin door: `Store` methods check that an input is plain JSON (naming the offending
// argument when it is not), hand it to the native addon, which runs the contract's operation
// off the JavaScript thread, and turn a failure into the `Error` subclass of its kind. Every
// rule of the memory lives in the Rust crates under the addon; the methods, their types and
// the error classes are generated from the contract's operation table (`generated/`).

import type { NativeStore } from '../native.js'
import { native } from './native-binding.js'
import { fromNative } from './errors.js'
import { InvalidInputError, UsageError } from './generated/errors.js'
import { METHODS, type MethodEntry } from './generated/methods.js'
import type { OperationName, OperationTypes, StoreMethods } from './generated/operations.js'
import type { ErrorKind } from './generated/schemas.js'
import { checkJson, plainJson, wellFormed } from './plain-json.js'

export type * from './generated/schemas.js'
export type * from './generated/operations.js'
export { AgentMemoryError } from './agent-memory-error.js'
export * from './generated/errors.js'
export { memoryToolHandlers, type MemoryToolCommand, type MemoryToolHandlers, type MemoryToolOptions } from './memory-tool.js'

/** `input` as the operation takes it, or an error naming the argument. */
function operationInput(operation: string, input: unknown, takesInput: boolean): unknown {
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
function nowMillis(now: OpenOptions['now'] | null): number | undefined {
  if (now === undefined || now === null) return undefined
  const ms: unknown = now instanceof Date ? now.getTime() : typeof now === 'string' ? Date.parse(now) : now
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms)) {
    throw new InvalidInputError('options.now must be a Date, an RFC 3339 time or milliseconds since the epoch', 'options.now')
  }
  return ms
}

function checkDatabase(db: unknown): asserts db is string {
  if (typeof db !== 'string' || db.length === 0) {
    throw new InvalidInputError(
      `db must be a SQLite file's path, ":memory:" or a postgres:// URL (got ${db === '' ? 'an empty string' : typeof db})`,
      'db',
    )
  }
  if (!wellFormed(db) || db.includes('\0')) throw new InvalidInputError('db holds a lone surrogate or a NUL character', 'db')
}

function checkOptions(options: unknown): OpenOptions {
  if (options === undefined || options === null) return {}
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidInputError(`options must be an object (got ${Array.isArray(options) ? 'an array' : typeof options})`, 'options')
  }
  return options as OpenOptions
}

/** An output as the addon answers: JSON text where parsing it makes the same value, else the value. */
function output(out: unknown): unknown {
  return typeof out === 'string' ? JSON.parse(out) : out
}

/** How a store is opened. */
export interface OpenOptions {
  /** "Now" for every call (reproducible output): a Date, RFC 3339 text or epoch milliseconds. */
  now?: Date | string | number
}

/**
 * The generated methods (`StoreMethods`) of a `Store`: its constructor puts each operation of
 * `METHODS` where the table says, so the class declares them through this interface, merged
 * with it.
 */
export interface Store extends StoreMethods {}

/** One open database: a SQLite file, a private in-memory database or PostgreSQL. */
export class Store {
  readonly #native: NativeStore

  /** Use `Store.open` or `Store.openSync`. */
  private constructor(nativeStore: NativeStore) {
    if (!(nativeStore instanceof native.NativeStore)) {
      throw new UsageError('open a store with Store.open(db) or Store.openSync(db)', 'db')
    }
    this.#native = nativeStore
    const self = this as unknown as Record<string, Record<string, unknown>>
    for (const entry of METHODS) {
      const target: Record<string, unknown> = entry.group === null ? self : (self[entry.group] ??= {})
      target[entry.method] = (input: unknown) => this.#call(entry, input)
      target[`${entry.method}Sync`] = (input: unknown) => this.#callSync(entry, input)
    }
  }

  /**
   * Opens (creating if needed) `db`, off the JavaScript thread: a SQLite file's path,
   * `":memory:"` or a `postgres://` URL. `options.now` fixes "now" for every call.
   */
  static async open(db: string, options?: OpenOptions): Promise<Store> {
    checkDatabase(db)
    const now = nowMillis(checkOptions(options).now)
    try {
      return new Store(await native.open(db, now))
    } catch (error) {
      throw fromNative(error)
    }
  }

  /** `Store.open` on the calling thread. */
  static openSync(db: string, options?: OpenOptions): Store {
    checkDatabase(db)
    const now = nowMillis(checkOptions(options).now)
    try {
      return new Store(native.NativeStore.openSync(db, now))
    } catch (error) {
      throw fromNative(error)
    }
  }

  /** The database, as messages show it (a URL without its password). */
  get location(): string {
    return this.#native.location
  }

  /** Whether `close` was called. */
  get closed(): boolean {
    return this.#native.closed
  }

  /** Closes the store; calls in flight finish, later ones fail with a `UsageError`. */
  close(): void {
    this.#native.close()
  }

  /** Runs the contract operation `name` (as `operations()` lists them) with its input. */
  async call<K extends OperationName>(name: K, input: OperationTypes[K][0]): Promise<OperationTypes[K][1]> {
    return this.#call(named(name), input) as Promise<OperationTypes[K][1]>
  }

  /** `call` on the calling thread. */
  callSync<K extends OperationName>(name: K, input: OperationTypes[K][0]): OperationTypes[K][1] {
    return this.#callSync(named(name), input) as OperationTypes[K][1]
  }

  async #call(entry: MethodEntry, input: unknown): Promise<unknown> {
    const value = operationInput(entry.operation, input, entry.takesInput)
    let out: unknown
    try {
      // As `#callSync`: the checked input crosses as JSON text, the output comes back as text.
      out = await this.#native.callJson(entry.operation, JSON.stringify(value))
    } catch (error) {
      throw fromNative(error)
    }
    return output(out)
  }

  #callSync(entry: MethodEntry, input: unknown): unknown {
    const value = operationInput(entry.operation, input, entry.takesInput)
    let out: unknown
    try {
      // The checked input is plain JSON: its text crosses in one string, and the output
      // comes back as text too unless parsing it would not make the same value.
      out = this.#native.callJsonSync(entry.operation, JSON.stringify(value))
    } catch (error) {
      throw fromNative(error)
    }
    return output(out)
  }
}

/** The entry of the operation `name`, or a `UsageError`. */
function named(name: unknown): MethodEntry {
  const found = METHODS.find((entry) => entry.operation === name)
  if (!found) throw new UsageError(`no operation named ${JSON.stringify(name)}`, 'name')
  return found
}

/** One operation of the contract. */
export interface OperationInfo {
  /** Its name, the stem of its schemas. */
  name: string
  /** Its family: `notes`, `trajectory`, `browser`, `turns`, `recording` or `admin`. */
  family: string
  /** What it does to the memory. */
  effect: 'reads' | 'writes' | 'deletes'
  /** When to call it. */
  description: string
  /** Its method on the `Store`: `group.method` or `method` (with a `...Sync` twin). */
  node: string
  /** The stem of its output schema. */
  output: string
  /** Whether it takes a JSON input. */
  takesInput: boolean
}

/** Every operation of the contract, as the addon's operation table has them. */
export function operations(): OperationInfo[] {
  return native.operations() as OperationInfo[]
}

/** Every kind of error the contract has (`errorClasses` gives the class of each). */
export function errorKinds(): ErrorKind[] {
  return native.errorKinds() as ErrorKind[]
}

/**
 * Runs the `agent-memory` command line in this process on `args` (without the program's
 * name) and returns its exit status. It blocks until the command ends.
 */
export function runCli(args: string[]): number {
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string' && wellFormed(a))) {
    throw new InvalidInputError('args must be an array of strings', 'args')
  }
  return native.runCli(args)
}
