// qkit acp serve driven by the official ACP client SDK (@agentclientprotocol/sdk, pinned): the SDK
// validates every message we send against the ACP schema, so each test is also a schema check of
// our updates. Covers initialize and auth, new, streamed prompts, resource blocks, slash commands,
// permissions, cancel, load after a restart, list, resume, close, set_mode and invalid params.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as acp from '@agentclientprotocol/sdk';
import { serveACP } from './acp-editor.js';
import { agentCommand, isolatedEnv, qkitBin } from './env.js';

const m = acp.methods;

// serve starts `qkit acp serve` on the text path (the fake q speaks ACP too; acp-proxy.test.js
// covers the proxy path) in home (a fresh one unless given); see serveACP.
function serve(extra, op, home) {
  return serveACP({ QKIT_AGENT_BACKEND: 'chat', ...extra }, op, { home });
}

async function init(agent) {
  return agent.request(m.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
}

async function newSession(agent, cwd) {
  const res = await agent.request(m.agent.session.new, { cwd: cwd ?? mkdtempSync(join(isolatedEnv().home, 'cwd-')), mcpServers: [] });
  return res.sessionId;
}

async function rejectsWith(promise, code, pattern) {
  await assert.rejects(promise, (e) => {
    assert.equal(e.code, code, `code of ${e.message}`);
    if (pattern) assert.match(e.message, pattern);
    return true;
  });
}

test('initialize, a session, a streamed prompt and the slash commands', async () => {
  await serve({ FAKEQ_LINES: '20', FAKEQ_INTERVAL: '1ms' }, async (agent, editor) => {
    const initRes = await init(agent);
    assert.equal(initRes.protocolVersion, 1);
    assert.deepEqual(initRes.authMethods, []);
    assert.equal(initRes.agentCapabilities.loadSession, true);
    assert.equal(initRes.agentCapabilities.promptCapabilities.embeddedContext, true);
    assert.ok(!initRes.agentCapabilities.promptCapabilities.image);
    for (const cap of ['list', 'resume', 'close']) assert.ok(initRes.agentCapabilities.sessionCapabilities[cap], cap);

    const res = await agent.request(m.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
    const id = res.sessionId;
    assert.equal(res.configOptions[0].category, 'model');
    await editor.waitFor(() => editor.updates.some((u) => u.sessionId === id && u.update.sessionUpdate === 'available_commands_update'));
    const cmds = editor.updates.find((u) => u.update.sessionUpdate === 'available_commands_update').update.availableCommands.map((c) => c.name);
    assert.ok(cmds.includes('context show'), `commands: ${cmds}`);

    const p = await agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'count' }] });
    assert.equal(p.stopReason, 'end_turn');
    const want = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`).join('');
    assert.equal(editor.text(id), want);

    const before = editor.text(id);
    const show = await agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: '/context show' }] });
    assert.equal(show.stopReason, 'end_turn');
    assert.notEqual(editor.text(id), before, '/context show said nothing');
  });
});

test('resource blocks reach q as XML; images are invalid params', async () => {
  await serve({ FAKEQ_ECHO_PROMPT: '1' }, async (agent, editor) => {
    await init(agent);
    const id = await newSession(agent);
    await agent.request(m.agent.session.prompt, {
      sessionId: id,
      prompt: [
        { type: 'resource_link', uri: 'file:///src/a.go', name: 'a.go' },
        { type: 'resource', resource: { uri: 'file:///src/b.md', mimeType: 'text/markdown', text: 'B' } },
      ],
    });
    assert.equal(editor.text(id), '<resource uri="file:///src/a.go"/>\n<resource uri="file:///src/b.md" mime-type="text/markdown">B</resource>\n');
    await rejectsWith(agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'image', data: 'aGk=', mimeType: 'image/png' }] }), -32602, /images are not supported/);
  });
});

test('a tool that needs approval asks the editor; allow_always is remembered', async () => {
  // q 1.19.7 as it behaves: the tool banner, then its approval error.
  await serve({ FAKEQ_FLAVOUR: 'q', FAKEQ_TOOLS: 'fs_write', FAKEQ_OUTPUT: 'written' }, async (agent, editor) => {
    await init(agent);
    const id = await newSession(agent);
    editor.answer = () => ({ outcome: { outcome: 'selected', optionId: 'allow_always' } });
    const p = await agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'write' }] });
    assert.equal(p.stopReason, 'end_turn');
    assert.equal(editor.asked.length, 1);
    assert.equal(editor.asked[0].toolCall.title, 'fs_write');
    // The tool is a tool call of its own, not text in the reply.
    const call = editor.updates.find((u) => u.sessionId === id && u.update.sessionUpdate === 'tool_call').update;
    assert.equal(call.title, 'fs_write');
    assert.equal(call.toolCallId, editor.asked[0].toolCall.toolCallId);
    assert.doesNotMatch(editor.text(id), /Using tool|^> /m);
    assert.deepEqual(editor.asked[0].options.map((o) => o.kind), ['allow_once', 'allow_always', 'reject_once']);
    assert.match(editor.text(id), /written/);
    await agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'again' }] });
    assert.equal(editor.asked.length, 1, 'asked again after allow_always');

    const other = await newSession(agent);
    editor.answer = () => ({ outcome: { outcome: 'selected', optionId: 'reject_once' } });
    const r = await agent.request(m.agent.session.prompt, { sessionId: other, prompt: [{ type: 'text', text: 'write' }] });
    assert.equal(r.stopReason, 'end_turn');
    assert.match(editor.text(other), /Permission to use fs_write was refused/);
  });
});

test('kiro denies untrusted tools: the editor is asked, and the prompt runs again with them trusted', async () => {
  await serve({ FAKEQ_FLAVOUR: 'kiro', FAKEQ_TOOLS: 'shell,@git/status', FAKEQ_OUTPUT: 'all done' }, async (agent, editor) => {
    await init(agent);
    const id = await newSession(agent);
    const p = await agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'check' }] });
    assert.equal(p.stopReason, 'end_turn');
    assert.deepEqual(editor.asked.map((a) => a.toolCall.title), ['shell', 'status (git)']);
    assert.equal(editor.text(id).split('all done').length, 2, editor.text(id));
    // Each call the editor allowed ends completed (the last status of each id).
    const last = {};
    for (const u of editor.updates) {
      if (u.sessionId === id && u.update.sessionUpdate.startsWith('tool_call') && u.update.status) last[u.update.toolCallId] = u.update.status;
    }
    assert.deepEqual(Object.values(last), ['completed', 'completed']);
  });
});

test('session/cancel ends the prompt with stopReason cancelled, and the session goes on', async () => {
  await serve({ FAKEQ_LINES: '100000', FAKEQ_INTERVAL: '10ms' }, async (agent, editor) => {
    await init(agent);
    const id = await newSession(agent);
    const running = agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'forever' }] });
    await editor.waitFor(() => editor.text(id).includes('line 2\n'));
    await agent.notify(m.agent.session.cancel, { sessionId: id });
    assert.equal((await running).stopReason, 'cancelled');
    const again = agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'again' }] });
    await editor.waitFor(() => editor.text(id).split('line 2\n').length > 2);
    await agent.notify(m.agent.session.cancel, { sessionId: id });
    assert.equal((await again).stopReason, 'cancelled');
  });
});

test('load after a restart replays the transcript; list, resume, close, set_mode', async () => {
  const { home, cleanup } = isolatedEnv();
  const cwd = mkdtempSync(join(home, 'project-'));
  try {
    let id;
    await serve({ FAKEQ_OUTPUT: 'answer' }, async (agent) => {
      await init(agent);
      id = await newSession(agent, cwd);
      for (const text of ['first question\nmore', 'second question']) {
        await agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text }] });
      }
      await agent.request(m.agent.session.prompt, { sessionId: id, prompt: [
        { type: 'text', text: 'see' },
        { type: 'resource_link', uri: 'file:///src/a.go', name: 'a.go' },
        { type: 'resource', resource: { uri: 'file:///src/b.md', mimeType: 'text/markdown', text: 'B' } },
      ] });
    }, home);
    await serve({ FAKEQ_OUTPUT: 'answer' }, async (agent, editor) => {
      await init(agent);
      await rejectsWith(agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'x' }] }), -32602, /not open/);
      await agent.request(m.agent.session.load, { sessionId: id, cwd, mcpServers: [] });
      // A prompt comes back as the blocks the editor sent: resources as resources.
      const replay = editor.updates.filter((u) => u.sessionId === id && u.update.sessionUpdate.endsWith('message_chunk'))
        .map((u) => `${u.update.sessionUpdate}:${u.update.content.type}:${u.update.content.text ?? u.update.content.uri ?? u.update.content.resource.text}`);
      assert.deepEqual(replay, [
        'user_message_chunk:text:first question\nmore', 'agent_message_chunk:text:answer',
        'user_message_chunk:text:second question', 'agent_message_chunk:text:answer',
        'user_message_chunk:text:see', 'user_message_chunk:resource_link:file:///src/a.go',
        'user_message_chunk:resource:B', 'agent_message_chunk:text:answer',
      ]);
      await rejectsWith(agent.request(m.agent.session.load, { sessionId: id, cwd: home, mcpServers: [] }), -32602, /belongs to the folder/);
      await rejectsWith(agent.request(m.agent.session.load, { sessionId: 'no-such-session', cwd, mcpServers: [] }), -32002, /not found/);

      const list = await agent.request(m.agent.session.list, { cwd });
      assert.equal(list.sessions.length, 1);
      assert.equal(list.sessions[0].title, 'first question');

      await agent.request(m.agent.session.close, { sessionId: id });
      const n = editor.updates.length;
      await agent.request(m.agent.session.resume, { sessionId: id, cwd, mcpServers: [] });
      assert.equal(editor.updates.filter((u) => u.update.sessionUpdate.endsWith('message_chunk')).length,
        editor.updates.slice(0, n).filter((u) => u.update.sessionUpdate.endsWith('message_chunk')).length, 'resume replayed');
      const p = await agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'third' }] });
      assert.equal(p.stopReason, 'end_turn');

      await rejectsWith(agent.request(m.agent.session.setMode, { sessionId: id, modeId: 'code' }), -32601);
      // A model the agent knows: q's offline list, or kiro-cli's own.
      const model = agentCommand === 'kiro-cli' ? 'claude-sonnet-4.5' : 'claude-sonnet-4';
      const set = await agent.request(m.agent.session.setConfigOption, { sessionId: id, configId: 'model', value: model });
      assert.equal(set.configOptions[0].currentValue, model);
      await rejectsWith(agent.request(m.agent.session.new, { cwd: 'relative/path', mcpServers: [] }), -32602, /absolute/);
    }, home);
  } finally {
    cleanup();
  }
});

test('logged out: the cli auth method is offered and sessions need authentication', async () => {
  await serve({ FAKEQ_LOGGED_OUT: '1' }, async (agent) => {
    const res = await init(agent);
    assert.deepEqual(res.authMethods.map((a) => [a.id, a.name, a.description]), [['cli', 'CLI Login', `Run '${agentCommand} login' to authenticate`]]);
    await rejectsWith(agent.request(m.agent.session.new, { cwd: process.cwd(), mcpServers: [] }), -32000);
    await rejectsWith(agent.request(m.agent.authenticate, { methodId: 'cli' }), -32000);
  });
});

test('the active profile\'s context files are prepended to the prompt q receives', async () => {
  const { home, env, cleanup } = isolatedEnv();
  try {
    const notes = join(home, 'notes.md');
    writeFileSync(notes, 'always use tabs\n');
    execFileSync(qkitBin, ['context', 'add', notes], { env });
    await serve({ FAKEQ_ECHO_PROMPT: '1' }, async (agent, editor) => {
      await init(agent);
      const id = await newSession(agent, home);
      await agent.request(m.agent.session.prompt, { sessionId: id, prompt: [{ type: 'text', text: 'format this' }] });
      const got = editor.text(id);
      assert.match(got, /^--- CONTEXT FILES BEGIN ---\n/);
      assert.ok(got.includes(`[${notes}]\nalways use tabs`), got);
      assert.ok(got.trimEnd().endsWith('format this'), got);
    }, home);
  } finally {
    cleanup();
  }
});
