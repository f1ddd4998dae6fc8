// Builds the package (`npm run build`): the native addon, then its TypeScript.
//
// The addon is built with napi-rs from the Cargo workspace's own target folder, so the
// workspace's compiled dependencies are reused: `cargo build -p agent-memory-node` (the dev
// profile unless `--release` or `--profile NAME` is given; `--features bench` adds the bench's
// Rust-side timer), with napi-derive writing its type
// definitions, then napi-rs's own generators write `native.d.ts` and the loader `native.js`
// (which tries the `.node` file beside it first, then the per-platform package), and the
// library is copied to `agent-memory.<platform>.node`. Then `tsc` compiles `ts/` (the
// sources, with the files `cargo xtask codegen` generates in `ts/generated/`) into `lib/`:
// CommonJS that Node's ES modules import by name, and its declarations. `lib/` is made
// afresh, so no file of a removed source stays behind.
//
// `napi build` itself always passes `--target`, which gives Cargo a second target folder and
// rebuilds every dependency; this script does what it does without that flag.

import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { generateTypeDef, writeJsBinding } from '@napi-rs/cli'

const here = dirname(dirname(fileURLToPath(import.meta.url)))
const args = process.argv.slice(2)
let profile = 'dev'
const features = []
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--release') profile = 'release'
  else if (args[i] === '--profile') profile = args[++i]
  else if (args[i] === '--features') features.push('--features', args[++i])
  else throw new Error(`unknown argument ${JSON.stringify(args[i])} (expected --release, --profile NAME or --features LIST)`)
}

const cargo = process.env.CARGO || 'cargo'
const metadata = JSON.parse(
  execFileSync(cargo, ['metadata', '--format-version', '1', '--no-deps', '--offline'], { cwd: here, encoding: 'utf8', maxBuffer: 64 << 20 }),
)
const targetDir = metadata.target_directory
const typeDefDir = join(targetDir, 'napi-type-def', 'agent-memory-node')
mkdirSync(typeDefDir, { recursive: true })
if (readdirSync(typeDefDir).length === 0) {
  // napi-derive writes the definitions only while it expands the crate: make Cargo do so.
  const lib = join(here, 'src', 'lib.rs')
  const now = new Date()
  utimesSync(lib, now, now)
}
execFileSync(cargo, ['build', '-p', 'agent-memory-node', '--lib', '--profile', profile, ...features], {
  cwd: here,
  stdio: 'inherit',
  env: { ...process.env, NAPI_TYPE_DEF_TMP_FOLDER: typeDefDir },
})

const pkg = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'))
const { exports, dts } = await generateTypeDef({ typeDefDir, cwd: here, constEnum: true })
writeFileSync(join(here, 'native.d.ts'), dts)
await writeJsBinding({
  platform: true,
  idents: exports,
  jsBinding: 'native.js',
  format: 'commonjs',
  binaryName: pkg.napi.binaryName,
  packageName: pkg.napi.packageName,
  version: pkg.version,
  outputDir: here,
})

// The addon is named for this machine's platform, as napi-rs's loader (`native.js`) looks for
// it beside itself: `agent-memory.linux-x64-gnu.node`, `agent-memory.darwin-arm64.node`, ...
const musl = process.platform === 'linux' && !process.report.getReport().header.glibcVersionRuntime
const platform =
  process.platform === 'linux'
    ? `linux-${process.arch}-${musl ? 'musl' : 'gnu'}`
    : process.platform === 'win32'
      ? `win32-${process.arch}-msvc`
      : `${process.platform}-${process.arch}`
const libraryFile =
  process.platform === 'win32'
    ? 'agent_memory_node.dll'
    : process.platform === 'darwin'
      ? 'libagent_memory_node.dylib'
      : 'libagent_memory_node.so'
const folder = profile === 'dev' ? 'debug' : profile
const library = join(targetDir, folder, libraryFile)
const addon = join(here, `${pkg.napi.binaryName}.${platform}.node`)
rmSync(addon, { force: true })
copyFileSync(library, addon)
if (!existsSync(addon)) throw new Error(`${addon} was not written`)
// The dev profile's debug information is most of the file; the packed addon does without it.
// (The copy is stripped, never Cargo's own output, so nothing is rebuilt.)
if (process.platform === 'linux') {
  try {
    execFileSync('strip', ['--strip-debug', addon], { stdio: 'inherit' })
  } catch (error) {
    if (error.code !== 'ENOENT') throw error
  }
}
console.log(`built ${addon} (${profile})`)

rmSync(join(here, 'lib'), { recursive: true, force: true })
execFileSync(process.execPath, [join(here, 'node_modules', 'typescript', 'bin', 'tsc'), '--project', join(here, 'tsconfig.json')], {
  cwd: here,
  stdio: 'inherit',
})
console.log(`compiled ts/ into ${join(here, 'lib')}`)
