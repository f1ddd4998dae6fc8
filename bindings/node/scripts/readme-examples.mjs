// Runs a README's TypeScript examples as a newcomer runs them: FOLDER is made afresh, `npm
// init -y` makes it a project (CommonJS, as npm makes one), `npm install` puts the packed
// tarball there with tsx, TypeScript, @types/node and PACKAGES (the Anthropic SDK), each
// ```ts block is saved as `example-N.ts`, `tsc` type-checks them all (strict, module
// nodenext: in this project they are CommonJS, where a top-level `await` is an error), and
// `tsx` runs them one by one in FOLDER, in the README's order, then all again, so the second
// run finds the database the first one left.
//
// usage: node readme-examples.mjs README.md FOLDER TARBALL [PACKAGE...]

import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

// tsx runs TypeScript as it is, with no build step; pinned so a run next year runs alike.
const TSX = 'tsx@4.23.15'

const [readme, folder, tarball, ...packages] = process.argv.slice(2)
if (!readme || !folder || !tarball) throw new Error('usage: readme-examples.mjs README.md FOLDER TARBALL [PACKAGE...]')

const text = readFileSync(readme, 'utf8')
const examples = [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match, i) => {
  const code = match[1]
  const line = text.slice(0, match.index).split('\n').length
  const first = code.split('\n').find((l) => l.trim() !== '')
  return { code, name: `example-${i + 1}.ts`, where: `line ${line} (example ${i + 1}: ${JSON.stringify(first)})` }
})
if (examples.length === 0) throw new Error(`${readme} has no \`\`\`ts examples`)

// TypeScript and @types/node at the versions the package itself is built with.
const { devDependencies } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
const tools = ['typescript', '@types/node'].map((name) => `${name}@${devDependencies[name]}`)

const project = resolve(folder)
rmSync(project, { recursive: true, force: true })
mkdirSync(project, { recursive: true })
const npm = (...args) => execFileSync('npm', args, { cwd: project, stdio: ['ignore', 'ignore', 'inherit'] })
npm('init', '-y')
npm('install', '--no-audit', '--no-fund', resolve(tarball), ...packages, TSX, ...tools)

for (const { code, name } of examples) writeFileSync(join(project, name), code)
writeFileSync(
  join(project, 'tsconfig.json'),
  JSON.stringify(
    {
      compilerOptions: { strict: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', types: ['node'], noEmit: true },
      files: examples.map(({ name }) => name),
    },
    null,
    2,
  ),
)
const tsc = spawnSync(process.execPath, [join(project, 'node_modules/typescript/bin/tsc'), '--project', 'tsconfig.json'], {
  cwd: project,
  stdio: 'inherit',
})
if (tsc.status !== 0) fail(`tsc found errors in the TypeScript examples of ${readme} (saved in ${project})`)

const env = { ...process.env }
// An example reaches the Anthropic API only with a key: never here. Nor does one read a
// database named outside it.
delete env.ANTHROPIC_API_KEY
delete env.AGENT_MEMORY_DB
for (const run of ['first', 'second']) {
  for (const { name, where } of examples) {
    console.log(`--- ${name}, ${run} run`)
    const done = spawnSync(join(project, 'node_modules/.bin/tsx'), [name], { cwd: project, stdio: 'inherit', env })
    if (done.status !== 0) {
      const how = done.error ? done.error.message : done.signal ? `signal ${done.signal}` : `exit status ${done.status}`
      fail(`${readme}, ${where}, saved as ${join(project, name)}, failed on the ${run} run (${how})`)
    }
  }
}
console.log(`${examples.length} TypeScript examples of ${readme} type-checked and ran twice in ${project}`)

function fail(message) {
  console.error(message)
  process.exit(1)
}
