// A built npm package, tried where it runs: `node smoke.cjs DATABASE` (from a folder whose
// node_modules holds `durable-agent-memory` and its platform package) records, crystallizes
// and recalls through the addon, on a SQLite file, and prints the platform it ran on.
// Run by `cargo xtask dist` on each addon this machine can run (natively or under qemu-user).
'use strict'
const assert = require('node:assert')
const { Store } = require('durable-agent-memory')

async function main() {
  const store = await Store.open(process.argv[2])
  const episode = { fingerprint: { task: 'deploy' }, trajectory: ['build', 'test', 'ship'], outcome: { success: true } }
  await store.trajectory.record({ partition: 'smoke', fields: ['task'], episodes: [episode, episode, episode] })
  await store.trajectory.crystallize({ partition: 'smoke' })
  const { patterns } = await store.trajectory.recall({ partition: 'smoke', fingerprint: { task: 'deploy' } })
  assert.deepStrictEqual(patterns.map((p) => p.canonical_sequence), [['build', 'test', 'ship']])
  console.log(`durable-agent-memory works on ${process.platform}-${process.arch} (Node.js ${process.version})`)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
