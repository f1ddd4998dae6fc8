// Type-checked against the installed declarations (tsc --noEmit): a browser agent's loop.
import { Store, NotFoundError, type BrowserRecordRunInput, type BrowserContextOutput } from 'durable-agent-memory'

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
  try {
    await store.browser.resume({ run_id: 'run_unknown' })
  } catch (error) {
    if (error instanceof NotFoundError) {
      const kind: 'not_found' = error.kind
      console.log(kind, error.input)
    }
  }
  // @ts-expect-error: the goal is required
  await store.browser.context({ url: 'https://shop.example.com/' })
  console.log(prompt, steps, names)
  store.close()
}

void main()
