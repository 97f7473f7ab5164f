// qkit mcp serve driven by the official TypeScript MCP client: tool listing with and without the
// optional q-developer-agent, a call against the fake q, a disabled call, cancellation, and a raw
// check that stdout carries nothing but JSON-RPC.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { agentCommand, flavour, isolatedEnv, qkitBin } from './env.js';

// connect starts `qkit mcp serve` with env and returns a connected client, the errors the
// transport reported (a non-JSON line on stdout would be one), and a cleanup function.
// extra may be a function of the private home folder (for files the fake q writes).
async function connect(extra = {}) {
  const iso = isolatedEnv();
  Object.assign(iso.env, typeof extra === 'function' ? extra(iso.home) : extra);
  const transport = new StdioClientTransport({ command: qkitBin, args: ['mcp', 'serve'], env: iso.env, stderr: 'pipe' });
  const errors = [];
  const client = new Client({ name: 'qkit-interop', version: '0.0.1' });
  client.onerror = (e) => errors.push(e);
  await client.connect(transport);
  return {
    client, transport, errors, home: iso.home,
    close: async () => { await client.close(); iso.cleanup(); },
  };
}

// The reply's text: every text block but the last one q-developer-agent adds for the assistant with
// the session's id (session() gives that one).
const forAssistant = (c) => c.annotations?.audience?.length === 1 && c.annotations.audience[0] === 'assistant';
const text = (res) => res.content.filter((c) => c.type === 'text' && !forAssistant(c)).map((c) => c.text).join('');
const session = (res) => res.content.filter((c) => c.type === 'text' && forAssistant(c)).map((c) => c.text).join('');

test('server identifies itself and lists tools without the optional one', async () => {
  const s = await connect();
  try {
    assert.equal(s.client.getServerVersion().name, 'qkit');
    assert.match(s.client.getInstructions(), /qkit_help/);
    const { tools } = await s.client.listTools();
    const names = tools.map((t) => t.name);
    assert.ok(names.includes('qkit_help'));
    assert.ok(!names.includes('q-developer-agent'), `listed: ${names}`);
    assert.deepEqual(s.errors, []);
  } finally {
    await s.close();
  }
});

test('a call to the disabled tool is a tool error saying how to enable it', async () => {
  const s = await connect();
  try {
    const res = await s.client.callTool({ name: 'q-developer-agent', arguments: { prompt: 'hi' } });
    assert.equal(res.isError, true);
    assert.match(text(res), /Set ENABLE_ADDITIONAL_TOOLS environment variable to include 'q-developer-agent'/);
  } finally {
    await s.close();
  }
});

test('enabled, q-developer-agent is listed with its parameters and runs q', async () => {
  const s = await connect({ ENABLE_ADDITIONAL_TOOLS: 'q-developer-agent', FAKEQ_OUTPUT: 'reply from q\\n', FAKEQ_ANSI: '1' });
  try {
    const { tools } = await s.client.listTools();
    const tool = tools.find((t) => t.name === 'q-developer-agent');
    assert.ok(tool, 'q-developer-agent not listed');
    assert.deepEqual(tool.inputSchema.required, ['prompt']);
    for (const p of ['prompt', 'resume', 'agent', 'override-model', 'yolo-mode', 'trust-tools', 'verbose']) {
      assert.ok(tool.inputSchema.properties[p], `parameter ${p}`);
    }
    // No built-in model list to go stale: any name, with the documented default.
    assert.equal(tool.inputSchema.properties['override-model'].enum, undefined);
    assert.match(tool.inputSchema.properties['override-model'].description, /claude-sonnet-4 \(default\)/);

    const res = await s.client.callTool({
      name: 'q-developer-agent',
      arguments: { prompt: 'explain', 'override-model': 'claude-sonnet-4', 'trust-tools': 'fs_read', resume: true },
    });
    assert.equal(res.isError ?? false, false, text(res));
    assert.equal(text(res), 'reply from q\n'); // the reply only: no "> " prefix, no colour
    // The session's id, for the model as well as in _meta (clients show a model the content).
    const id = res._meta?.['qkit/session_id'];
    assert.match(id ?? '', /^[0-9a-f-]{36}$/);
    assert.equal(session(res), `[qkit session_id: ${id}: pass it as session_id to continue this conversation]`);

    const bad = await s.client.callTool({ name: 'q-developer-agent', arguments: { prompt: '   ' } });
    assert.equal(bad.isError, true);
    assert.match(text(bad), /prompt is a required parameter and cannot be empty/);

    const help = await s.client.callTool({ name: 'qkit_help', arguments: { tool_name: 'q-developer-agent' } });
    assert.match(text(help), /Troubleshooting:/);
    assert.deepEqual(s.errors, []);
  } finally {
    await s.close();
  }
});

test('the agent argv follows the parameters', async () => {
  const s = await connect((home) => ({ ENABLE_ADDITIONAL_TOOLS: 'q-developer-agent', FAKEQ_OUTPUT: 'ok', FAKEQ_RECORD: join(home, 'argv.jsonl') }));
  const record = join(s.home, 'argv.jsonl');
  try {
    await s.client.callTool({
      name: 'q-developer-agent',
      arguments: { prompt: 'go', resume: true, agent: 'dev', 'override-model': 'claude-3.7-sonnet', 'yolo-mode': true, 'trust-tools': 'fs_read,fs_write', verbose: true },
    });
    const argv = JSON.parse(readFileSync(record, 'utf8').trim());
    assert.deepEqual(argv, ['chat', '--no-interactive', '--resume', '--agent', 'dev', '--model', 'claude-3.7-sonnet',
      '--trust-all-tools', '--trust-tools=fs_read,fs_write', '--verbose', 'go']);
  } finally {
    await s.close();
  }
});

test('a cancelled call stops the agent and its process group', async () => {
  const s = await connect((home) => ({ ENABLE_ADDITIONAL_TOOLS: 'q-developer-agent', FAKEQ_OUTPUT: 'x', FAKEQ_SLEEP: '60s', FAKEQ_GRANDCHILD: join(home, 'grandchild.pid') }));
  const pidFile = join(s.home, 'grandchild.pid');
  try {
    const ac = new AbortController();
    // The fake q creates the file before it writes the pid: wait for the pid itself.
    const waitForPid = setInterval(() => { if (existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '') { clearInterval(waitForPid); ac.abort(); } }, 20);
    await assert.rejects(s.client.callTool({ name: 'q-developer-agent', arguments: { prompt: 'hi' } }, undefined, { signal: ac.signal }));
    clearInterval(waitForPid);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    assert.ok(pid > 0, `no pid in ${pidFile}`);
    assert.ok(await processGone(pid), `grandchild ${pid} still running`);
  } finally {
    await s.close();
  }
});

// processGone waits until pid has exited (a zombie counts) and reports whether it did.
async function processGone(pid) {
  for (let i = 0; i < 500; i++) {
    const stat = `/proc/${pid}/stat`;
    if (!existsSync(stat) || / Z /.test(readFileSync(stat, 'utf8').split(')').pop())) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

// The agent ignores SIGTERM (FAKEQ_DEAF): qkit must still end it, and exit by itself, within the
// 2 s the SDK waits after SIGTERM, on both backends.
for (const backend of ['chat', 'acp']) {
  test(`closing the client while a call runs ends the server and the agent's process group (${backend} backend, an agent deaf to SIGTERM)`, async () => {
    const s = await connect((home) => ({
      ENABLE_ADDITIONAL_TOOLS: 'q-developer-agent', QKIT_AGENT_BACKEND: backend, FAKEQ_OUTPUT: 'x',
      FAKEQ_GRANDCHILD: join(home, 'grandchild.pid'), FAKEQ_DEAF: join(home, 'agent.txt'),
      // q 1.19.7 has no acp: the acp row runs kiro-cli whichever flavour this pass is.
      ...(backend === 'chat' ? { FAKEQ_SLEEP: '60s' }
        : { FAKEQ_LINES: '100', FAKEQ_INTERVAL: '1s', FAKEQ_FLAVOUR: 'kiro', QKIT_AGENT_COMMAND: 'kiro-cli' }),
    }));
    const pidFile = join(s.home, 'grandchild.pid');
    const agentFile = join(s.home, 'agent.txt');
    const serverPid = s.transport.pid;
    const serverExit = new Promise((resolve) => s.transport._process.on('exit', (code, signal) => resolve({ code, signal })));
    try {
      let settled;
      const pending = s.client.callTool({ name: 'q-developer-agent', arguments: { prompt: 'hi' } })
        .catch((e) => e).then((r) => { settled = r; return r; });
      // Until the agent and its grandchild are up; a call that ends first (no agent started) fails
      // the test rather than leaving it waiting.
      while (!existsSync(pidFile) || readFileSync(pidFile, 'utf8') === '' || !(existsSync(agentFile) && readFileSync(agentFile, 'utf8').startsWith('pid '))) {
        assert.equal(settled, undefined, `the call ended before the agent was up: ${JSON.stringify(settled)}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      // The SDK closes stdin, waits 2 s, then sends SIGTERM, and SIGKILL 2 s later: had the server
      // been killed, the agent and its grandchild would be left running.
      await s.client.close();
      await pending;
      const exit = await serverExit;
      assert.notEqual(exit.signal, 'SIGKILL', 'the SDK had to kill the server');
      const pid = Number(readFileSync(pidFile, 'utf8'));
      assert.ok(pid > 0, `no pid in ${pidFile}`);
      const agent = Number(readFileSync(agentFile, 'utf8').match(/^pid (\d+)/)?.[1]);
      assert.ok(agent > 0, `no pid in ${agentFile}`);
      assert.ok(await processGone(serverPid), `server ${serverPid} still running`);
      assert.ok(await processGone(agent), `agent ${agent} still running`);
      assert.ok(await processGone(pid), `grandchild ${pid} still running`);
    } finally {
      await s.close();
    }
  });
}

test('stdout carries only JSON-RPC, and malformed input gets a parse error', async () => {
  const { env, cleanup } = isolatedEnv({ ENABLE_ADDITIONAL_TOOLS: 'q-developer-agent', FAKEQ_OUTPUT: 'hello', QKIT_LOG_LEVEL: 'debug' });
  try {
    const child = spawn(qkitBin, ['mcp', 'serve'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    const lines = [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } },
      'this is not json',
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'q-developer-agent', arguments: { prompt: 'hi' } } },
    ];
    child.stdin.end(lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
    const code = await new Promise((resolve) => child.on('close', resolve));
    assert.equal(code, 0, err);
    const msgs = out.trim().split('\n').map((l) => JSON.parse(l));
    for (const m of msgs) assert.equal(m.jsonrpc, '2.0');
    assert.ok(msgs.some((m) => m.error?.code === -32700), out);
    const call = msgs.find((m) => m.id === 3);
    assert.equal(call.result.content[0].text, 'hello');
    assert.match(err, /running agent/); // logs went to stderr
  } finally {
    cleanup();
  }
});

test('progress notifications reach the client while q works', async () => {
  const s = await connect({ ENABLE_ADDITIONAL_TOOLS: 'q-developer-agent', FAKEQ_OUTPUT: 'done', FAKEQ_SLEEP: '6s' });
  try {
    const progress = [];
    const res = await s.client.callTool({ name: 'q-developer-agent', arguments: { prompt: 'slow' } }, undefined, {
      onprogress: (p) => progress.push(p),
      resetTimeoutOnProgress: true,
    });
    assert.equal(res.isError ?? false, false, text(res));
    // The first at once, with the agent's first line; then, while it is quiet, one every 5 s.
    assert.ok(progress.length >= 2, `progress: ${JSON.stringify(progress)}`);
    assert.equal(progress[0].message, `${agentCommand}: done`);
    assert.match(progress[1].message, /has been running for/);
  } finally {
    await s.close();
  }
});

// Against q and kiro-cli alike (FAKEQ_FLAVOUR): an MCP tool trusted by its bare name is not trusted,
// and the result says which value to trust it by; the reply never carries the tool banners.
test('an untrusted tool is a tool error naming the trust-tools value', { skip: flavour === '' && 'needs a flavour' }, async () => {
  const s = await connect({ ENABLE_ADDITIONAL_TOOLS: 'q-developer-agent', FAKEQ_OUTPUT: 'done', FAKEQ_TOOLS: 'fs_read,@git/status' });
  try {
    const bad = await s.client.callTool({ name: 'q-developer-agent', arguments: { prompt: 'hi', 'trust-tools': 'fs_read,status' } });
    assert.equal(bad.isError, true);
    assert.match(text(bad), /tool @git\/status/);
    assert.match(text(bad), /to allow it, run again with trust-tools fs_read,@git\/status \(or yolo-mode true to trust every tool\)/);
    assert.ok(text(bad).startsWith(`q Developer command failed: ${agentCommand} `), text(bad));
    const good = await s.client.callTool({ name: 'q-developer-agent', arguments: { prompt: 'hi', 'trust-tools': 'fs_read,@git/status' } });
    assert.equal(good.isError ?? false, false, text(good));
    assert.equal(text(good), 'Let me use the tools for that.\n\ndone');
    assert.doesNotMatch(text(good), /Using tool|⋮/);
  } finally {
    await s.close();
  }
});

test('the first progress notification carries the agent\'s first line', { skip: flavour === '' && 'needs a flavour' }, async () => {
  const s = await connect({ ENABLE_ADDITIONAL_TOOLS: 'q-developer-agent', FAKEQ_LINES: '3', FAKEQ_INTERVAL: '200ms' });
  try {
    const got = [];
    const res = await s.client.callTool({ name: 'q-developer-agent', arguments: { prompt: 'hi' } }, undefined, {
      onprogress: (p) => got.push(p.message),
    });
    assert.equal(res.isError ?? false, false, text(res));
    assert.ok(got.length >= 1, 'no progress notification');
    assert.equal(got[0], `${agentCommand}: line 1`);
  } finally {
    await s.close();
  }
});
