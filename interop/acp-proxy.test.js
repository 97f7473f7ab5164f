// qkit acp serve on the proxy path (agent.backend acp), driven by the official ACP client SDK
// (@agentclientprotocol/sdk), in front of the stand-in ACP agent (fakeq's `q acp`, imitating
// kiro-cli acp): the editor sees the agent's own tool calls, serves its files, approves tools
// once, gets its stdio MCP servers used by the agent, and lists and reloads sessions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { serveACP } from './acp-editor.js';
import { isolatedEnv } from './env.js';

const m = acp.methods;

// serve starts `qkit acp serve` on the proxy path (see serveACP). The proxy path needs an agent that
// speaks ACP: kiro-cli, in every flavour run (q 1.19.7 has no acp subcommand; with it, acp serve
// takes the text path, which acp.test.js covers).
function serve(extra, op, opts) {
  return serveACP({ QKIT_AGENT_BACKEND: 'acp', FAKEQ_FLAVOUR: 'kiro', QKIT_AGENT_COMMAND: 'kiro-cli', ...extra }, op, opts);
}

async function init(agent, clientCapabilities = {}) {
  return agent.request(m.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities });
}

// inHome runs op in a throwaway home (an isolated QKIT_HOME under it) and removes the home after.
async function inHome(op) {
  const { home, cleanup } = isolatedEnv();
  try {
    return await op(home);
  } finally {
    cleanup();
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
  return !/\) Z /.test(stat);
}

async function gone(pid) {
  const deadline = Date.now() + 30_000;
  while (alive(pid)) {
    if (Date.now() > deadline) throw new Error(`process ${pid} outlived qkit`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a tool call with its diff reaches the editor; approved once, the tool runs once', () => inHome(async (home) => {
  const cwd = mkdtempSync(join(home, 'project-'));
  const ran = join(home, 'ran');
  await serve({ FAKEQ_ACP_TOOLS: 'write:out.txt', FAKEQ_ACP_RAN: ran, FAKEQ_OUTPUT: 'file written' }, async (agent, editor) => {
    await init(agent);
    const { sessionId: id } = await agent.request(m.agent.session.new, { cwd, mcpServers: [] });
    const p = await agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'write it' }] });
    assert.equal(p.stopReason, 'end_turn');
    const [call] = editor.of(id, 'tool_call');
    assert.equal(call.kind, 'edit');
    assert.deepEqual(call.content, [{ type: 'diff', path: join(cwd, 'out.txt'), newText: 'written by fakeq\n' }]);
    assert.equal(editor.asked.length, 1);
    assert.equal(editor.asked[0].sessionId, id);
    assert.equal(editor.asked[0].toolCall.toolCallId, call.toolCallId);
    assert.equal(readFileSync(ran, 'utf8'), 'write:out.txt\n', 'the tool ran once');
    assert.match(editor.text(id), /file written/);
    await editor.waitFor(() => editor.of(id, 'usage_update').length > 0);
    const cmds = editor.of(id, 'available_commands_update').at(-1).availableCommands.map((c) => c.name);
    assert.ok(cmds.includes('context show'), `commands: ${cmds}`);
  }, { home });
}));

test('fs/read_text_file is answered from the editor\'s buffer, not the disk', () => inHome(async (home) => {
  const cwd = mkdtempSync(join(home, 'project-'));
  const notes = join(cwd, 'notes.txt');
  writeFileSync(notes, 'on disk');
  await serve({ FAKEQ_ACP_V3: '1', FAKEQ_ACP_TOOLS: 'read:notes.txt' }, async (agent, editor) => {
    await init(agent, { fs: { readTextFile: true, writeTextFile: false } });
    const { sessionId: id } = await agent.request(m.agent.session.new, { cwd, mcpServers: [] });
    await agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'read' }] });
    const [call] = editor.of(id, 'tool_call');
    assert.equal(editor.toolText(id, call.toolCallId), 'unsaved in the editor');
    assert.deepEqual(editor.reads.map((r) => [r.sessionId, r.path]), [[id, notes]]);
  }, { home, fs: { [notes]: 'unsaved in the editor' } });
}));

test('a stdio MCP server given in session/new is called by the agent through the bridge', () => inHome(async (home) => {
  const pidFile = join(home, 'server.pid');
  const server = new URL('./stdio-echo-server.js', import.meta.url).pathname;
  await serve({ FAKEQ_ACP_TOOLS: 'mcp:notes/echo' }, async (agent, editor) => {
    await init(agent);
    const { sessionId: id } = await agent.request(m.agent.session.new, {
      cwd: mkdtempSync(join(home, 'project-')),
      mcpServers: [{ name: 'notes', command: process.execPath, args: [server], env: [{ name: 'ECHO_SERVER_PID', value: pidFile }] }],
    });
    await agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'use notes' }] });
    const [call] = editor.of(id, 'tool_call');
    assert.equal(editor.toolText(id, call.toolCallId), 'echo from the stdio server: from fakeq');
    const pid = Number(readFileSync(pidFile, 'utf8'));
    assert.ok(alive(pid));
    await agent.request(m.agent.session.close, { sessionId: id });
    await gone(pid);
  }, { home });
}));

test('list, load after a restart (the agent replays its session) and close', () => inHome(async (home) => {
  const cwd = mkdtempSync(join(home, 'project-'));
  let id;
  await serve({ FAKEQ_OUTPUT: 'first answer' }, async (agent) => {
    await init(agent);
    ({ sessionId: id } = await agent.request(m.agent.session.new, { cwd, mcpServers: [] }));
    await agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'remember apple' }] });
  }, { home });
  const terminated = join(home, 'terminated');
  await serve({ FAKEQ_OUTPUT: 'second answer', FAKEQ_ACP_TERMINATED: terminated }, async (agent, editor) => {
    await init(agent);
    const list = await agent.request(m.agent.session.list, { cwd });
    assert.deepEqual(list.sessions.map((s) => [s.sessionId, s.title]), [[id, 'remember apple']]);
    await agent.request(m.agent.session.load, { sessionId: id, cwd, mcpServers: [] });
    const replay = editor.updates.filter((u) => u.sessionId === id && u.update.sessionUpdate.endsWith('message_chunk'))
      .map((u) => `${u.update.sessionUpdate}:${u.update.content.text}`);
    assert.deepEqual(replay, ['user_message_chunk:remember apple', 'agent_message_chunk:first answer']);
    const p = await agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'which?' }] });
    assert.equal(p.stopReason, 'end_turn');
    assert.match(editor.text(id), /second answer/);
    await agent.request(m.agent.session.close, { sessionId: id });
    // kiro was told to drop the session from its process (_kiro.dev/session/terminate).
    assert.equal(readFileSync(terminated, 'utf8').trim().split('\n').length, 1);
  }, { home });
}));

// cancelMidTool prompts a new session of the agent envFor(pidFile) configures, whose tool writes
// its pid to pidFile and sleeps; once it runs, the session is cancelled: the prompt answers
// cancelled and the tool is gone while qkit and the agent still run. prepare sets up the editor.
async function cancelMidTool(home, envFor, prepare = () => {}) {
  const pidFile = join(home, 'tool.pid');
  await serve(envFor(pidFile), async (agent, editor) => {
    await init(agent);
    prepare(editor);
    const { sessionId: id } = await agent.request(m.agent.session.new, { cwd: mkdtempSync(join(home, 'project-')), mcpServers: [] });
    const running = agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'sleep' }] });
    await editor.waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '');
    await agent.notify(m.agent.session.cancel, { sessionId: id });
    assert.equal((await running).stopReason, 'cancelled');
    await gone(Number(readFileSync(pidFile, 'utf8')));
  }, { home });
}

test('cancel mid-tool-call: the prompt answers cancelled and no process is left', () => inHome((home) =>
  cancelMidTool(home, (pidFile) => ({ FAKEQ_ACP_TOOLS: `shell:echo $$ > ${pidFile}; exec sleep 60` }))));

// The same paths in front of the second stand-in agent, written with the TypeScript SDK's agent
// side (stand-in-agent.js): other session ids and option ids, the standard usage_update, no
// session/load (qkit replays its own transcript and starts a new agent session), fs and terminal
// through the client whenever it offers them. KIRO_API_KEY stands for a login (it has no whoami).
const tsAgent = { QKIT_AGENT_COMMAND: new URL('./stand-in-agent.js', import.meta.url).pathname, KIRO_API_KEY: 'interop' };

test('TypeScript stand-in: a tool call, approved once, runs once; the editor\'s buffer is read', () => inHome(async (home) => {
  const cwd = mkdtempSync(join(home, 'project-'));
  const notes = join(cwd, 'notes.txt');
  writeFileSync(notes, 'on disk');
  const ran = join(home, 'ran');
  await serve({ ...tsAgent, TS_AGENT_TOOLS: 'echo hi', TS_AGENT_RAN: ran, TS_AGENT_READ: 'notes.txt' }, async (agent, editor) => {
    await init(agent, { fs: { readTextFile: true, writeTextFile: false } });
    const { sessionId: id } = await agent.request(m.agent.session.new, { cwd, mcpServers: [] });
    assert.doesNotMatch(id, /^ts-/, 'the editor sees qkit\'s session id');
    editor.answer = ({ params }) => ({ outcome: { outcome: 'selected', optionId: params.options.find((o) => o.kind === 'allow_once').optionId } });
    const p = await agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'go' }] });
    assert.equal(p.stopReason, 'end_turn');
    assert.equal(editor.asked.length, 1);
    assert.equal(editor.asked[0].sessionId, id);
    assert.equal(readFileSync(ran, 'utf8'), 'echo hi\n', 'the tool ran once');
    const calls = editor.of(id, 'tool_call');
    assert.deepEqual(calls.map((c) => c.kind), ['execute', 'read']);
    assert.equal(editor.toolText(id, calls[1].toolCallId), 'unsaved in the editor');
    assert.match(editor.text(id), /chunk 3 of go/);
    assert.ok(editor.of(id, 'usage_update').some((u) => u.used === 5000));
  }, { home, fs: { [notes]: 'unsaved in the editor' } });
}));

test('TypeScript stand-in: cancel mid-turn, and a load after a restart from an agent that cannot load', () => inHome(async (home) => {
  const cwd = mkdtempSync(join(home, 'project-'));
  let id;
  await serve({ ...tsAgent, TS_AGENT_CHUNKS: '1' }, async (agent, editor) => {
    await init(agent);
    ({ sessionId: id } = await agent.request(m.agent.session.new, { cwd, mcpServers: [] }));
    await agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'remember pear' }] });
    assert.match(editor.text(id), /chunk 1 of remember pear/);
  }, { home });
  await serve({ ...tsAgent, TS_AGENT_CHUNKS: '1000', TS_AGENT_SLEEP: '20' }, async (agent, editor) => {
    await init(agent);
    const list = await agent.request(m.agent.session.list, { cwd });
    assert.deepEqual(list.sessions.map((s) => [s.sessionId, s.title]), [[id, 'remember pear']]);
    assert.deepEqual((await agent.request(m.agent.session.list, { cwd: home })).sessions, [], 'the cwd filter');
    await agent.request(m.agent.session.load, { sessionId: id, cwd, mcpServers: [] });
    const replay = editor.updates.filter((u) => u.sessionId === id && u.update.sessionUpdate.endsWith('message_chunk'))
      .map((u) => `${u.update.sessionUpdate}:${u.update.content.text}`);
    assert.deepEqual(replay, ['user_message_chunk:remember pear', 'agent_message_chunk:chunk 1 of remember pear\n']);
    const running = agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'which fruit?' }] });
    await editor.waitFor(() => /chunk 2 of/.test(editor.text(id)));
    // The new agent session was given the conversation so far.
    assert.match(editor.text(id), /chunk 1 of --- CONVERSATION SO FAR ---/);
    await agent.notify(m.agent.session.cancel, { sessionId: id });
    assert.equal((await running).stopReason, 'cancelled');
    await agent.request(m.agent.session.close, { sessionId: id });
  }, { home });
}));

test('TypeScript stand-in: cancel mid-tool-call stops the tool; no process is left', () => inHome((home) =>
  cancelMidTool(home, (pidFile) => ({ ...tsAgent, TS_AGENT_TOOLS: `echo $$ > ${pidFile}; exec sleep 60` }), (editor) => {
    editor.answer = ({ params }) => ({ outcome: { outcome: 'selected', optionId: params.options.find((o) => o.kind === 'allow_once').optionId } });
  })));

test('TypeScript stand-in: a stdio MCP server reaches it through the bridge; its edit arrives with the diff', () => inHome(async (home) => {
  const cwd = mkdtempSync(join(home, 'project-'));
  const pidFile = join(home, 'server.pid');
  const server = new URL('./stdio-echo-server.js', import.meta.url).pathname;
  await serve({ ...tsAgent, TS_AGENT_MCP: 'notes/echo', TS_AGENT_WRITE: 'out.txt', TS_AGENT_CHUNKS: '1' }, async (agent, editor) => {
    await init(agent);
    const { sessionId: id } = await agent.request(m.agent.session.new, {
      cwd, mcpServers: [{ name: 'notes', command: process.execPath, args: [server], env: [{ name: 'ECHO_SERVER_PID', value: pidFile }] }],
    });
    await agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'go' }] });
    const calls = editor.of(id, 'tool_call');
    assert.equal(editor.toolText(id, calls[0].toolCallId), 'echo from the stdio server: from the ts agent');
    assert.deepEqual(calls[1].content, [{ type: 'diff', path: join(cwd, 'out.txt'), newText: 'written by the ts agent\n' }]);
    // The stand-in writes without asking permission and the editor has no fs: qkit, serving the
    // file, refuses it.
    assert.ok(!existsSync(join(cwd, 'out.txt')), 'an unasked write was served');
    assert.match(editor.toolText(id, calls[1].toolCallId), /did not ask the editor's permission/);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    await agent.request(m.agent.session.close, { sessionId: id });
    await gone(pid);
  }, { home });
}));
