// Makes the npm packages a release publishes, as tarballs, from a built package and the
// addons of each platform:
//
//   node scripts/stage-release.mjs --out DIR [--addon PLATFORM=FILE]...
//
// - `durable-agent-memory-<platform>-0.1.0.tgz` for each `--addon`: the folder
//   `npm/<platform>` (its package.json names the `os`, `cpu` and `libc` npm installs it on)
//   with the addon as `agent-memory.<platform>.node`;
// - `durable-agent-memory-0.1.0.tgz`: the package as `npm pack` makes it (run `npm run build`
//   first), without any addon of its own, and with one optional dependency per platform of
//   `napi.targets`, at the package's version, as napi-rs's loader (`native.js`) expects.
//
// Each tarball's packed and unpacked size is printed, and written to DIR/sizes.json.
// The committed package.json has no optional dependencies: they name packages that exist
// only once a release is published, and the lockfile could not hold them before.

import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(dirname(fileURLToPath(import.meta.url)))
const args = process.argv.slice(2)
let out = null
const addons = []
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--out') out = resolve(args[++i])
  else if (args[i] === '--addon') {
    const [platform, file] = (args[++i] ?? '').split('=')
    if (!platform || !file) throw new Error(`--addon takes PLATFORM=FILE (got ${JSON.stringify(args[i])})`)
    addons.push({ platform, file: resolve(file) })
  } else throw new Error(`unknown argument ${JSON.stringify(args[i])} (expected --out DIR and --addon PLATFORM=FILE)`)
}
if (!out) throw new Error('--out DIR is required')
mkdirSync(out, { recursive: true })

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const pkg = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'))
const platforms = readdirSync(join(here, 'npm'))

/** Packs `folder` into `out`, answering the tarball's path and sizes. */
function pack(folder) {
  const [report] = JSON.parse(
    execFileSync(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', out, folder], {
      encoding: 'utf8',
      shell: process.platform === 'win32',
    }),
  )
  const file = join(out, report.filename)
  return { file: basename(file), packed: statSync(file).size, unpacked: report.unpackedSize }
}

const sizes = []
for (const { platform, file } of addons) {
  if (!platforms.includes(platform)) {
    throw new Error(`no package folder npm/${platform} (platforms: ${platforms.join(', ')})`)
  }
  const staging = mkdtempSync(join(tmpdir(), `agent-memory-${platform}-`))
  for (const name of readdirSync(join(here, 'npm', platform))) {
    copyFileSync(join(here, 'npm', platform, name), join(staging, name))
  }
  copyFileSync(file, join(staging, `${pkg.napi.binaryName}.${platform}.node`))
  sizes.push(pack(staging))
  rmSync(staging, { recursive: true, force: true })
}

// The main package: packed as it stands, unpacked, then given its optional dependencies.
const staging = mkdtempSync(join(tmpdir(), 'agent-memory-main-'))
const first = pack(here)
execFileSync('tar', ['-xzf', join(out, first.file), '-C', staging])
rmSync(join(out, first.file))
const main = join(staging, 'package')
for (const name of readdirSync(main)) if (name.endsWith('.node')) rmSync(join(main, name))
const published = JSON.parse(readFileSync(join(main, 'package.json'), 'utf8'))
published.optionalDependencies = Object.fromEntries(platforms.map((p) => [`${pkg.name}-${p}`, pkg.version]))
writeFileSync(join(main, 'package.json'), `${JSON.stringify(published, null, 2)}\n`)
sizes.push(pack(main))
rmSync(staging, { recursive: true, force: true })

for (const { file, packed, unpacked } of sizes) {
  console.log(`${file}: ${(packed / 1e6).toFixed(1)} MB packed, ${(unpacked / 1e6).toFixed(1)} MB unpacked`)
}
writeFileSync(join(out, 'sizes.json'), `${JSON.stringify(sizes, null, 2)}\n`)
