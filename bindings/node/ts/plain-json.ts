// What the package checks of every input before it crosses into the addon: that it is plain
// JSON, naming the offending argument when it is not.

import { InvalidInputError } from './generated/errors.js'

const MAX_DEPTH = 128

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** Whether `text` is well-formed UTF-16 (no lone surrogate), on Node 18 too. */
export function wellFormed(text: string): boolean {
  const own = (text as { isWellFormed?: () => boolean }).isWellFormed
  return typeof own === 'function' ? own.call(text) : !LONE_SURROGATE.test(text)
}

/**
 * Throws an `InvalidInputError` naming the first part of `root` (called `name`) that is not
 * plain JSON: a lone surrogate, a number that is not finite, `undefined` in an array, a
 * bigint, function, symbol, class instance or cycle. `undefined` properties count as absent,
 * as in `JSON.stringify`.
 *
 * One walk on every call, so it keeps the path as a stack of steps and spells it out only for
 * the error: a plain input allocates nothing per value.
 */
export function checkJson(root: unknown, name: string): void {
  const steps: Array<string | number> = []
  const parents: object[] = []
  const where = (): string => {
    let text = name
    for (const step of steps) text += typeof step === 'number' ? `[${step}]` : `.${step}`
    return text
  }
  const fail = (message: (at: string) => string): never => {
    const at = where()
    throw new InvalidInputError(message(at), at)
  }
  const visit = (value: unknown): void => {
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
    const object = value as object
    if (parents.length >= MAX_DEPTH) fail((at) => `${at} is nested deeper than ${MAX_DEPTH} levels`)
    // The objects above this one: a short list, cheaper to scan than a set is to keep.
    if (parents.includes(object)) fail((at) => `${at} refers to itself (a cycle)`)
    parents.push(object)
    if (Array.isArray(object)) {
      for (let i = 0; i < object.length; i++) {
        steps.push(i)
        visit(object[i])
        steps.pop()
      }
    } else {
      const proto: unknown = Object.getPrototypeOf(object)
      if (proto !== Object.prototype && proto !== null) {
        const named = (object as { constructor?: { name?: unknown } }).constructor?.name
        const kind = typeof named === 'string' && named.length > 0 ? named : 'object'
        fail((at) => `${at} must be a plain object or array (got a ${kind})`)
      }
      const fields = object as Record<string, unknown>
      for (const key of Object.keys(fields)) {
        const item = fields[key]
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
export function plainJson(value: unknown, depth: number): boolean {
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
      const proto: unknown = Object.getPrototypeOf(value)
      if (proto !== Object.prototype && proto !== null) return false
      const fields = value as Record<string, unknown>
      for (const key in fields) {
        const item = fields[key]
        if (item === undefined) continue
        if (!wellFormed(key) || !plainJson(item, depth + 1)) return false
      }
      return true
    }
    default:
      return false
  }
}
