// A stdio MCP server with one tool, "echo", for the proxy's MCP bridge test: qkit starts it and
// offers it to the agent over loopback HTTP. It writes its pid to $ECHO_SERVER_PID.
import { writeFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

if (process.env.ECHO_SERVER_PID) writeFileSync(process.env.ECHO_SERVER_PID, String(process.pid));
const server = new McpServer({ name: 'notes', version: '1.0.0' });
server.tool('echo', 'echoes text', { text: z.string().optional() }, async ({ text }) => ({
  content: [{ type: 'text', text: `echo from the stdio server: ${text ?? ''}` }],
}));
await server.connect(new StdioServerTransport());
