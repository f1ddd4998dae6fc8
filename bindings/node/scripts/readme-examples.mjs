// Runs the README's TypeScript examples as a user would: every ```ts block of the README is
// written to `<folder>/example-N.mts`, type-checked and compiled by `tsc` against the
// installed package, and each compiled example runs with node in a fresh working folder.
//
// usage: node readme-examples.mjs README.md FOLDER TSC TYPES
//   FOLDER must be inside the project that installed the package; TSC is tsc's script and
//   TYPES the folder holding @types/node (the package's build tools).

import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

const [readme, folder, tsc, types] = process.argv.slice(2)
if (!readme || !folder || !tsc || !types) throw new Error('usage: readme-examples.mjs README.md FOLDER TSC TYPES')

const text = readFileSync(readme, 'utf8')
const blocks = [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1])
if (blocks.length === 0) throw new Error(`${readme} has no \`\`\`ts examples`)

const out = resolve(folder)
rmSync(out, { recursive: true, force: true })
mkdirSync(out, { recursive: true })
const files = blocks.map((code, i) => {
  const name = `example-${i + 1}.mts`
  writeFileSync(join(out, name), code)
  return name
})
writeFileSync(
  join(out, 'tsconfig.json'),
  JSON.stringify(
    {
      compilerOptions: { strict: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', outDir: 'dist', types: ['node'], typeRoots: [resolve(types)] },
      files,
    },
    null,
    2,
  ),
)
execFileSync(process.execPath, [tsc, '--project', join(out, 'tsconfig.json')], { stdio: 'inherit' })
for (const name of files) {
  const compiled = join(out, 'dist', name.replace(/\.mts$/, '.mjs'))
  const cwd = mkdtempSync(join(tmpdir(), 'readme-example-'))
  console.log(`--- README example ${name} (in ${cwd})`)
  const env = { ...process.env }
  delete env.AGENT_MEMORY_DB
  // An example that would call the Anthropic API does so only with a key: never here.
  delete env.ANTHROPIC_API_KEY
  try {
    execFileSync(process.execPath, [compiled], { cwd, stdio: 'inherit', env })
  } finally {
    rmSync(cwd, { recursive: true, force: true })
  }
}
console.log(`${files.length} README examples type-checked and ran`)
