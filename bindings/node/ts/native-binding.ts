// The native addon, loaded by napi-rs's loader (`native.js`), with an error that says what to
// do when this platform has no binary.
//
// The addon ships in one package per platform (`durable-agent-memory-<platform>`, an optional
// dependency of this one, chosen by npm from its `os`, `cpu` and `libc` fields), or beside
// `native.js` when the package was built from a checkout. napi-rs's own error blames an npm
// bug whatever went wrong; this one names the platform, whether a binary is published for it,
// and how to build one from source.

import type * as Native from '../native.js'

/** The platforms a binary is published for, as napi-rs names them (`package.json`'s `napi.targets`). */
export const PUBLISHED_PLATFORMS = [
  'linux-x64-gnu',
  'linux-arm64-gnu',
  'linux-x64-musl',
  'darwin-x64',
  'darwin-arm64',
  'win32-x64-msvc',
] as const

/** This process's platform as napi-rs names it: `linux-x64-gnu`, `darwin-arm64`, `win32-x64-msvc`, ... */
export function platformName(): string {
  const { platform, arch } = process
  if (platform === 'linux') return `${platform}-${arch}-${isMusl() ? 'musl' : 'gnu'}`
  if (platform === 'win32') return `${platform}-${arch}-msvc`
  return `${platform}-${arch}`
}

function isMusl(): boolean {
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined
  return report?.header !== undefined && !report.header.glibcVersionRuntime
}

/** What to tell the user when the addon did not load on `platform`. */
export function missingBinaryMessage(platform: string): string {
  const head = `durable-agent-memory could not load its native addon on this platform (${platform}, Node.js ${process.version}).`
  if ((PUBLISHED_PLATFORMS as readonly string[]).includes(platform)) {
    return (
      `${head} A binary is published for it in the package durable-agent-memory-${platform}, ` +
      `an optional dependency that was not installed or did not load (npm leaves optional ` +
      `dependencies out with --omit=optional, or when the lockfile was made on another ` +
      `platform): run \`npm install durable-agent-memory-${platform}\`. ` +
      `The loader's own errors are in this error's cause.`
    )
  }
  return (
    `${head} Binaries are published for ${PUBLISHED_PLATFORMS.join(', ')}, not for ${platform}. ` +
    `To build one from source, install Rust (https://rustup.rs) and install the package from a ` +
    `checkout of its repository: \`npm install <checkout>/bindings/node\` compiles the addon ` +
    `for this machine (a few minutes). The loader's own errors are in this error's cause.`
  )
}

function load(): typeof Native {
  try {
    return require('../native.js') as typeof Native
  } catch (cause) {
    const error = new Error(missingBinaryMessage(platformName()))
    // Assigned rather than passed as an option, which Node.js before 16.9 ignores.
    ;(error as Error & { cause?: unknown }).cause = cause
    throw error
  }
}

/** The addon's functions. */
export const native: typeof Native = load()
