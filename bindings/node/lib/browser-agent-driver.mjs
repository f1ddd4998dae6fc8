// The ES module entry of the browser-agent-driver drop-in (`browser-agent-driver.cjs`).
import dropIn from './browser-agent-driver.cjs'

export const { TrajectoryStore, TrajectoryAnalyzer, AppKnowledge, SelectorCache, ProjectStore, RunRegistry, ContextBudget, useDatabase } = dropIn
export default dropIn
