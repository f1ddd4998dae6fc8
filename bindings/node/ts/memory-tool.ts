// Anthropic's memory tool (`memory_20250818`) on a store's notes: the handlers the Anthropic
// TypeScript SDK's `betaMemoryTool` helper takes (`@anthropic-ai/sdk/helpers/beta/memory`),
// one per command. Each runs the command through the store's `notes` operation with
// `sdk: 'typescript'` and resolves with the text the SDK's own `BetaLocalFilesystemMemoryTool`
// answers, word for word; a failure rejects with an `Error` whose message is that tool's
// error text (the SDK's tool runner sends it back to the model as the tool's error).
// The SDK is not needed to load this: the handlers are plain async functions.

import { InvalidInputError } from './generated/errors.js'
import type { NotesInput } from './generated/schemas.js'
import type { Store } from './index.js'
import { wellFormed } from './plain-json.js'

/** A command of Anthropic's memory tool (`memory_20250818`), as the model sends it. */
export type MemoryToolCommand =
  | { command: 'view'; path: string; view_range?: number[] | null }
  | { command: 'create'; path: string; file_text: string }
  | { command: 'str_replace'; path: string; old_str: string; new_str: string }
  | { command: 'insert'; path: string; insert_line: number; insert_text: string }
  | { command: 'delete'; path: string }
  | { command: 'rename'; old_path: string; new_path: string }

/**
 * The handlers of Anthropic's memory tool, one per command, as the Anthropic SDK's
 * `betaMemoryTool` (`@anthropic-ai/sdk/helpers/beta/memory`) takes them: each resolves with
 * the tool's text and rejects with an `Error` whose message is the tool's error text.
 */
export type MemoryToolHandlers = {
  [K in MemoryToolCommand['command']]: (command: Extract<MemoryToolCommand, { command: K }>) => Promise<string>
}

/** Where the memory tool keeps its notes. */
export interface MemoryToolOptions {
  /** Whose `/memories` tree: each scope is one of its own (`default` when absent). */
  scope?: string
  /** Values never stored or shown, by name: each occurrence becomes `${name}`. */
  secrets?: Record<string, string>
  /**
   * The largest note a write may leave, in bytes of UTF-8 text (256 KiB when absent, at
   * most 64 MiB); a write past it rejects with a text naming the limit.
   */
  maxNoteBytes?: number
  /**
   * The session or run every version the model writes is kept with (its writer is the
   * model, through `node`): what `store.noteForgetBy({ session })` forgets after a poisoned
   * run.
   */
  session?: string
}

const COMMANDS: ReadonlyArray<MemoryToolCommand['command']> = ['view', 'create', 'str_replace', 'insert', 'delete', 'rename']

/**
 * Anthropic's memory tool on `store`'s notes of `options.scope` (default `default`), with
 * `options.secrets` (name to value) never stored or shown, and notes of at most
 * `options.maxNoteBytes` bytes: `betaMemoryTool(memoryToolHandlers(store, { scope }))`.
 */
export function memoryToolHandlers(store: Store, options: MemoryToolOptions = {}): MemoryToolHandlers {
  if (store === null || typeof store !== 'object' || typeof store.notes !== 'function') {
    throw new InvalidInputError('store must be a Store (from Store.open or Store.openSync)', 'store')
  }
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidInputError('options must be an object ({ scope, secrets, maxNoteBytes, session })', 'options')
  }
  const { scope, secrets, maxNoteBytes, session } = options
  if (scope !== undefined && (typeof scope !== 'string' || scope.length === 0 || !wellFormed(scope))) {
    throw new InvalidInputError('options.scope must be a non-empty string', 'options.scope')
  }
  if (session !== undefined && (typeof session !== 'string' || !wellFormed(session))) {
    throw new InvalidInputError('options.session must be a string', 'options.session')
  }
  if (maxNoteBytes !== undefined && !Number.isSafeInteger(maxNoteBytes)) {
    throw new InvalidInputError('options.maxNoteBytes must be an integer number of bytes', 'options.maxNoteBytes')
  }
  const handlers: Partial<Record<MemoryToolCommand['command'], (command: object) => Promise<string>>> = {}
  for (const name of COMMANDS) {
    handlers[name] = async (command: object) => {
      if (command === null || typeof command !== 'object' || Array.isArray(command)) {
        throw new InvalidInputError(`the ${name} command must be an object`, 'command')
      }
      // The contract checks the command's fields; the handler only names the command, and
      // asks for the texts of the TypeScript SDK's own tool, which models are shown.
      // The writer is the model, in the handler's session: a field the model adds cannot
      // name another (`source`), and a view answers the tool's own text (`as_data`).
      const input = {
        ...command,
        command: name,
        scope,
        secrets,
        sdk: 'typescript',
        max_note_bytes: maxNoteBytes,
        source: undefined,
        session,
        as_data: undefined,
      } as NotesInput
      const { text } = await store.notes(input)
      return text
    }
  }
  return handlers as MemoryToolHandlers
}
