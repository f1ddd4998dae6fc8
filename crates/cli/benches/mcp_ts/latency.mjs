// W-mcp with the official MCP TypeScript SDK: the latency of warm tool calls to
// `agent-memory mcp` over stdio or streamable HTTP. One argument, a JSON object:
// {"transport": "stdio", "command": BIN, "args": [...]} or {"transport": "http", "url": URL},
// plus "tool", "arguments", "warm" and "calls". Prints one JSON line: the microseconds of
// each measured call.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const config = JSON.parse(process.argv[2]);
const transport =
  config.transport === "stdio"
    ? new StdioClientTransport({ command: config.command, args: config.args, stderr: "ignore" })
    : new StreamableHTTPClientTransport(new URL(config.url));
const client = new Client({ name: "agent-memory-latency", version: "0" });
await client.connect(transport);

async function call() {
  const result = await client.callTool({ name: config.tool, arguments: config.arguments });
  if (result.isError) {
    throw new Error(`${config.tool} failed: ${JSON.stringify(result.content)}`);
  }
}

for (let i = 0; i < config.warm; i++) {
  await call();
}
const samples = [];
for (let i = 0; i < config.calls; i++) {
  const started = process.hrtime.bigint();
  await call();
  samples.push(Number(process.hrtime.bigint() - started) / 1000);
}
await client.close();
console.log(JSON.stringify({ samples_us: samples }));
