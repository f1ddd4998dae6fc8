// A writer for sharing.test.mjs, run as a worker thread or a process: `writer.mjs DB PARTITION N`
// records N episodes into PARTITION, one call each, alternating async and sync calls.
import { Store } from 'durable-agent-memory'

const [db, partition, count] = process.argv.slice(2)
const store = await Store.open(db)
const episode = (i) => ({
  fingerprint: { problem_topology: `t${i % 3}`, affected_layer: partition },
  trajectory: ['step', String(i)],
  outcome: { success: i % 2 === 0 },
})
for (let i = 0; i < Number(count); i++) {
  const input = { partition, episodes: [episode(i)] }
  if (i % 2) store.trajectory.recordSync(input)
  else await store.trajectory.record(input)
}
store.close()
