#!/usr/bin/env node
'use strict'
// The `agent-memory` command line (and `agent-memory mcp`, the MCP server), run in this
// process by the native addon: no Rust toolchain or separate binary needed.
const { runCli } = require('../native.js')

process.exit(runCli(process.argv.slice(2)))
