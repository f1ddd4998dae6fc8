// `npm install` of the package from a checkout of its repository (a folder or a packed copy
// of one): builds what a published package ships prebuilt, the native addon for this machine
// and the compiled TypeScript in `lib/`, with `scripts/build.mjs`.
//
// It does nothing
// - in the package's own folder (`npm ci` there installs its tools; `npm run build` builds),
// - when the package is already built (`lib/` and an addon beside `native.js`).
//
// It needs a Rust toolchain (https://rustup.rs) and the package's build tools, which it
// installs into the package's folder from its lockfile when they are missing. The addon is
// built with the release profile; `AGENT_MEMORY_BUILD_PROFILE=dev` builds faster and runs
// slower (the package's tests use it).

import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(dirname(fileURLToPath(import.meta.url)))
const initCwd = process.env.INIT_CWD ? resolve(process.env.INIT_CWD) : null

if (initCwd === here) process.exit(0)
const built = existsSync(join(here, 'lib', 'index.js')) && existsSync(join(here, 'native.js'))
if (built && readdirSync(here).some((file) => file.endsWith('.node'))) process.exit(0)

const cargo = process.env.CARGO || 'cargo'
try {
  execFileSync(cargo, ['--version'], { stdio: 'ignore' })
} catch {
  console.error(
    'durable-agent-memory: installing the package from a checkout builds its native addon, ' +
      `which needs a Rust toolchain, and \`${cargo}\` was not found. Install Rust from ` +
      'https://rustup.rs and run the install again, or install a published release instead.',
  )
  process.exit(1)
}
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
if (!existsSync(join(here, 'node_modules', 'typescript')) || !existsSync(join(here, 'node_modules', '@napi-rs', 'cli'))) {
  console.log('durable-agent-memory: installing the build tools (npm ci in the package folder)')
  execFileSync(npm, ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], {
    cwd: here,
    stdio: 'inherit',
    shell: process.platform === 'win32',
  })
}
const profile = process.env.AGENT_MEMORY_BUILD_PROFILE || 'release'
console.log(`durable-agent-memory: building the native addon (${profile} profile) and lib/`)
execFileSync(process.execPath, [join(here, 'scripts', 'build.mjs'), '--profile', profile], { cwd: here, stdio: 'inherit' })
