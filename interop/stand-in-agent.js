#!/usr/bin/env node
// A second stand-in ACP agent, written with the official TypeScript SDK's agent side
// (@agentclientprotocol/sdk), so qkit's ACP client (internal/acpclient, on the Go SDK) is proven
// against an implementation other than the one it is built on. qkit starts it as
// `<agent.command> acp [flags]`; it differs from fakeq on purpose where ACP allows it:
//   - session ids are "ts-N", permission option ids are "yes"/"always"/"no" (not the kinds),
//   - it does not remember "allow always" (it asks again; qkit must answer from its own memory),
//   - a rejection does not end the turn: it reports the call failed and carries on (end_turn),
//   - it does its file and shell work through fs/* and terminal/* whenever the client offers them,
//   - usage comes as the standard usage_update, not kiro's _kiro.dev/metadata.
// Environment:
//   TS_AGENT_TOOLS   comma list of shell commands to run as tool calls (kind execute); a
//                    session/cancel stops the running one (SIGTERM) and ends the turn cancelled
//   TS_AGENT_READ    a file (relative to the cwd) to read through fs/read_text_file
//   TS_AGENT_WRITE   a file to write through fs/write_text_file ("written by the ts agent\n")
//   TS_AGENT_RAN     append one line per tool call that actually ran
//   TS_AGENT_CHUNKS  how many reply chunks to send (default 3)
//   TS_AGENT_SLEEP   milliseconds to wait before each chunk (a turn to cancel)
//   TS_AGENT_MCP     server/tool: call tool (with {"text":"from the ts agent"}) on the HTTP MCP
//                    server of that name given in session/new, as a tool call (kind other)
import { appendFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { spawn } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const m = acp.methods;
const env = process.env;
const args = process.argv.slice(2);
if (args[0] !== 'acp') {
  process.stderr.write(`stand-in-agent: unknown subcommand ${JSON.stringify(args[0] ?? '')}\n`);
  process.exit(2);
}
const trustAll = args.includes('-a');

let clientCaps = {};
let next = 0;
const sessions = new Map(); // id -> { cwd, abort }

const sleep = (ms, signal) => new Promise((resolve) => {
  const t = setTimeout(resolve, ms);
  signal?.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
});

// shell runs cmd with sh in cwd and resolves with its output once it exited; an abort of signal
// stops it (SIGTERM) and resolves once it is gone, so a cancelled turn leaves no process behind.
const shell = (cmd, cwd, signal) => new Promise((resolve, reject) => {
  const child = spawn('sh', ['-c', cmd], { cwd, stdio: ['ignore', 'pipe', 'inherit'], signal });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d) => { out += d; });
  child.on('error', (e) => { if (e.name !== 'AbortError') reject(e); });
  child.on('close', () => resolve(out));
});

const app = acp.agent({ name: 'qkit-ts-stand-in' })
  .onRequest(m.agent.initialize, ({ params }) => {
    clientCaps = params.clientCapabilities ?? {};
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { loadSession: false, promptCapabilities: { embeddedContext: true }, mcpCapabilities: { http: true } },
      agentInfo: { name: 'ts-stand-in', version: '1.0.0' },
      authMethods: [],
    };
  })
  .onRequest(m.agent.session.new, ({ params }) => {
    const sessionId = `ts-${++next}`;
    sessions.set(sessionId, { cwd: params.cwd, abort: null, mcp: params.mcpServers ?? [] });
    return { sessionId };
  })
  .onNotification(m.agent.session.cancel, ({ params }) => {
    sessions.get(params.sessionId)?.abort?.abort();
  })
  .onRequest(m.agent.session.prompt, async ({ params, client }) => {
    const s = sessions.get(params.sessionId);
    if (!s) throw acp.RequestError.invalidParams(`unknown session ${params.sessionId}`);
    s.abort = new AbortController();
    const signal = s.abort.signal;
    const sessionId = params.sessionId;
    const update = (u) => client.notify(m.client.session.update, { sessionId, update: u });
    const text = params.prompt.filter((b) => b.type === 'text').map((b) => b.text).join('');

    await update({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'considering the request' } });
    await update({ sessionUpdate: 'plan', entries: [{ content: 'Do the work', priority: 'high', status: 'in_progress' }] });

    let n = 0;
    const tools = (env.TS_AGENT_TOOLS ?? '').split(',').filter(Boolean);
    for (const cmd of tools) {
      const toolCallId = `ts-call-${++n}`;
      await update({ sessionUpdate: 'tool_call', toolCallId, title: `Running: ${cmd}`, kind: 'execute', status: 'pending', rawInput: { command: cmd } });
      let allowed = trustAll;
      if (!allowed) {
        const answer = await client.request(m.client.session.requestPermission, {
          sessionId,
          toolCall: { toolCallId, title: `Running: ${cmd}`, kind: 'execute' },
          options: [
            { optionId: 'yes', name: 'Allow', kind: 'allow_once' },
            { optionId: 'always', name: 'Always allow', kind: 'allow_always' },
            { optionId: 'no', name: 'Reject', kind: 'reject_once' },
          ],
        }, { signal });
        if (answer.outcome.outcome === 'cancelled') return { stopReason: 'cancelled' };
        allowed = answer.outcome.optionId !== 'no';
      }
      if (!allowed) {
        await update({ sessionUpdate: 'tool_call_update', toolCallId, status: 'failed', content: [{ type: 'content', content: { type: 'text', text: 'refused by the user' } }] });
        continue; // unlike kiro, carry on with the turn
      }
      await update({ sessionUpdate: 'tool_call_update', toolCallId, status: 'in_progress' });
      let output;
      if (clientCaps.terminal) {
        const term = await client.request(m.client.terminal.create, { sessionId, command: 'sh', args: ['-c', cmd], cwd: s.cwd });
        await client.request(m.client.terminal.waitForExit, { sessionId, terminalId: term.terminalId });
        output = (await client.request(m.client.terminal.output, { sessionId, terminalId: term.terminalId })).output;
        await client.request(m.client.terminal.release, { sessionId, terminalId: term.terminalId });
      } else {
        const run = await shell(cmd, s.cwd, signal);
        if (signal.aborted) {
          await update({ sessionUpdate: 'tool_call_update', toolCallId, status: 'failed', content: [{ type: 'content', content: { type: 'text', text: 'cancelled' } }] });
          return { stopReason: 'cancelled' };
        }
        output = run;
      }
      if (env.TS_AGENT_RAN) appendFileSync(env.TS_AGENT_RAN, `${cmd}\n`);
      await update({ sessionUpdate: 'tool_call_update', toolCallId, status: 'completed', content: [{ type: 'content', content: { type: 'text', text: output } }] });
    }

    if (env.TS_AGENT_MCP) {
      const [name, tool] = env.TS_AGENT_MCP.split('/');
      const server = s.mcp.find((x) => x.type === 'http' && x.name === name);
      const toolCallId = `ts-call-${++n}`;
      await update({ sessionUpdate: 'tool_call', toolCallId, title: `${name}: ${tool}`, kind: 'other', status: 'in_progress' });
      let text;
      try {
        if (!server) throw new Error(`no HTTP MCP server named ${name}`);
        const headers = Object.fromEntries((server.headers ?? []).map((h) => [h.name, h.value]));
        const mcp = new McpClient({ name: 'ts-stand-in', version: '1.0.0' });
        await mcp.connect(new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers } }));
        const res = await mcp.callTool({ name: tool, arguments: { text: 'from the ts agent' } });
        text = res.content.filter((c) => c.type === 'text').map((c) => c.text).join('');
        await mcp.close();
        await update({ sessionUpdate: 'tool_call_update', toolCallId, status: 'completed', content: [{ type: 'content', content: { type: 'text', text } }] });
      } catch (e) {
        await update({ sessionUpdate: 'tool_call_update', toolCallId, status: 'failed', content: [{ type: 'content', content: { type: 'text', text: String(e.message ?? e) } }] });
      }
    }

    const abs = (p) => (isAbsolute(p) ? p : join(s.cwd, p));
    if (env.TS_AGENT_READ && clientCaps.fs?.readTextFile) {
      const path = abs(env.TS_AGENT_READ);
      const toolCallId = `ts-call-${++n}`;
      await update({ sessionUpdate: 'tool_call', toolCallId, title: `Read ${env.TS_AGENT_READ}`, kind: 'read', status: 'in_progress', locations: [{ path }] });
      try {
        const r = await client.request(m.client.fs.readTextFile, { sessionId, path });
        await update({ sessionUpdate: 'tool_call_update', toolCallId, status: 'completed', content: [{ type: 'content', content: { type: 'text', text: r.content } }] });
      } catch (e) {
        await update({ sessionUpdate: 'tool_call_update', toolCallId, status: 'failed', content: [{ type: 'content', content: { type: 'text', text: String(e.message ?? e) } }] });
      }
    }
    if (env.TS_AGENT_WRITE && clientCaps.fs?.writeTextFile) {
      const path = abs(env.TS_AGENT_WRITE);
      const toolCallId = `ts-call-${++n}`;
      const newText = 'written by the ts agent\n';
      await update({ sessionUpdate: 'tool_call', toolCallId, title: `Write ${env.TS_AGENT_WRITE}`, kind: 'edit', status: 'in_progress', locations: [{ path }], content: [{ type: 'diff', path, newText }] });
      try {
        await client.request(m.client.fs.writeTextFile, { sessionId, path, content: newText });
        await update({ sessionUpdate: 'tool_call_update', toolCallId, status: 'completed' });
      } catch (e) {
        await update({ sessionUpdate: 'tool_call_update', toolCallId, status: 'failed', content: [{ type: 'content', content: { type: 'text', text: String(e.message ?? e) } }] });
      }
    }

    const chunks = Number(env.TS_AGENT_CHUNKS ?? 3);
    for (let i = 1; i <= chunks; i++) {
      if (env.TS_AGENT_SLEEP) await sleep(Number(env.TS_AGENT_SLEEP), signal);
      if (signal.aborted) return { stopReason: 'cancelled' };
      await update({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: `chunk ${i} of ${text}\n` } });
    }
    await update({ sessionUpdate: 'plan', entries: [{ content: 'Do the work', priority: 'high', status: 'completed' }] });
    await update({ sessionUpdate: 'usage_update', used: 5000, size: 200000, cost: { amount: 0.02, currency: 'USD' } });
    return { stopReason: 'end_turn' };
  });

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const conn = app.connect(stream);
await conn.closed;
process.exit(0);
