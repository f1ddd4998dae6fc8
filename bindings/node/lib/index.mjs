// The ES module entry point: the same objects as the CommonJS one (`index.cjs`).
import memory from './index.cjs'

export const {
  Store,
  memoryToolHandlers,
  operations,
  runCli,
  AgentMemoryError,
  UsageError,
  InvalidInputError,
  NotFoundError,
  ConflictError,
  CorruptError,
  IoError,
  DatabaseError,
} = memory
export default memory
