// Type-checked against the installed declarations (tsc --noEmit): a browser agent's loop, and
// the generated surface (methods, their types, the error classes).
import {
  Store,
  NotFoundError,
  errorClasses,
  operations,
  type BrowserRecordRunInput,
  type BrowserContextOutput,
  type ErrorKind,
  type OperationTypes,
} from 'durable-agent-memory'
import { TrajectoryStore, type Trajectory } from 'durable-agent-memory/browser-agent-driver'

async function main(): Promise<void> {
  const store = await Store.open('memory.db')
  const context: BrowserContextOutput = await store.browser.context({ goal: 'buy a watch', url: 'https://shop.example.com/' })
  const prompt: string = context.context
  const run: BrowserRecordRunInput = {
    goal: 'buy a watch',
    start_url: 'https://shop.example.com/',
    success: true,
    turns: [{ url: 'https://shop.example.com/', action: { action: 'click', selector: '#buy' } }],
  }
  const recorded = await store.browser.recordRun(run)
  const steps: number = recorded.steps
  const listed = store.listSync()
  const names: string[] = listed.partitions.map((p) => p.partition)
  const started = store.browser.runStartSync({ run_id: 'run_1', goal: 'buy a watch', domain: 'shop.example.com' })
  const state: 'running' | 'completed' | 'failed' = started.status
  const same: OperationTypes['browser_run_start'][1] = await store.call('browser_run_start', { run_id: 'run_2', goal: 'g', domain: 'd' })
  try {
    await store.browser.resume({ run_id: 'run_unknown' })
  } catch (error) {
    if (error instanceof NotFoundError) {
      const kind: 'not_found' = error.kind
      console.log(kind, error.input)
    }
  }
  const kinds: ErrorKind[] = Object.keys(errorClasses) as ErrorKind[]
  const nodeNames: string[] = operations().map((op) => op.node)
  // @ts-expect-error: the goal is required
  await store.browser.context({ url: 'https://shop.example.com/' })
  // @ts-expect-error: no such method
  store.browser.recordRunLater(run)
  // @ts-expect-error: list takes no input
  store.listSync({ partition: 'p' })
  // @ts-expect-error: no such operation
  await store.call('browser_record', {})
  const trajectories = new TrajectoryStore('trajectories', { similarityThreshold: 0.3 })
  const best: Trajectory | null = trajectories.findBestMatch('buy a watch')
  console.log(prompt, steps, names, state, same.run_id, kinds, nodeNames, best?.goal)
  store.close()
}

void main()
