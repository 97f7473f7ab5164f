// ask_user_questions driven by the official TypeScript MCP client while separate `qkit questions`
// processes answer or reject it, as a person at another terminal (or a script) would.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { isolatedEnv, qkitBin } from './env.js';

const run = promisify(execFile);

async function connect(extra = {}) {
  const iso = isolatedEnv(extra);
  const transport = new StdioClientTransport({ command: qkitBin, args: ['mcp', 'serve'], env: iso.env, stderr: 'pipe' });
  const errors = [];
  const client = new Client({ name: 'qkit-interop', version: '0.0.1' });
  client.onerror = (e) => errors.push(e);
  await client.connect(transport);
  return { client, errors, env: iso.env, close: async () => { await client.close(); iso.cleanup(); } };
}

// qkit runs the qkit CLI in the server's environment (same QKIT_HOME) and returns its stdout.
const qkit = async (env, ...args) => (await run(qkitBin, args, { env })).stdout;

const text = (res) => res.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

const questions = [
  { question: 'Which language should we use?', header: 'Language', multiSelect: false,
    options: [{ label: 'Go', description: 'static binary' }, { label: 'TypeScript' }] },
  { question: 'Which extras?', header: 'Extras', multiSelect: true, options: [{ label: 'Lint' }, { label: 'Docs' }] },
];

test('ask_user_questions is listed with its annotations and schemas', async () => {
  const s = await connect();
  try {
    const { tools } = await s.client.listTools();
    const tool = tools.find((t) => t.name === 'ask_user_questions');
    assert.ok(tool, 'not listed');
    assert.equal(tool.annotations.openWorldHint, true);
    assert.equal(tool.annotations.readOnlyHint, false);
    assert.equal(tool.annotations.idempotentHint, true);
    assert.equal(tool.inputSchema.properties.questions.maxItems, 4);
    assert.deepEqual(tool.outputSchema.required, ['sessionId', 'callId', 'status', 'answers']);
    assert.deepEqual(s.errors, []);
  } finally {
    await s.close();
  }
});

test('a qkit questions answer process answers a call made with a progress token', async () => {
  const s = await connect();
  try {
    const call = s.client.callTool({ name: 'ask_user_questions', arguments: { questions } }, undefined, {
      onprogress: () => {}, resetTimeoutOnProgress: true, timeout: 60000,
    });
    const pending = JSON.parse(await qkit(s.env, 'questions', 'wait', '--json', '--timeout', '10s'));
    assert.equal(pending.status, 'pending');
    assert.equal(pending.questions[0].header, 'Language');
    await qkit(s.env, 'questions', 'answer', pending.shortId, '--answer', '1=Go', '--answer', 'Extras=Lint,Docs', '--other', '2=and CI');
    const res = await call;
    assert.equal(res.isError ?? false, false, text(res));
    assert.equal(text(res), "Here are the user's answers:\n\n1. [Language] Which language should we use?\n→ Go — static binary\n\n" +
      '2. [Extras] Which extras?\n→ Lint\n→ Docs\n→ Other: "and CI"');
    // The client validated structuredContent against the outputSchema before returning it.
    assert.equal(res.structuredContent.sessionId, pending.id);
    assert.equal(res.structuredContent.callId, pending.callId);
    assert.equal(res.structuredContent.status, 'completed');
    assert.deepEqual(res.structuredContent.answers[1].selected, ['Lint', 'Docs']);
    const shown = JSON.parse(await qkit(s.env, 'questions', 'show', pending.id, '--json'));
    assert.equal(shown.status, 'completed');
  } finally {
    await s.close();
  }
});

test('a rejection with a reason comes back as the rejection message', async () => {
  const s = await connect();
  try {
    const call = s.client.callTool({ name: 'ask_user_questions', arguments: { questions } });
    const pending = JSON.parse(await qkit(s.env, 'questions', 'wait', '--json', '--timeout', '10s'));
    await qkit(s.env, 'questions', 'reject', pending.id, '--reason', 'Ask me after the release');
    const res = await call;
    assert.equal(res.isError ?? false, false);
    assert.equal(text(res), 'User rejected this question set.\n\nRejection reason: "Ask me after the release"');
    assert.equal(res.structuredContent.status, 'rejected');
  } finally {
    await s.close();
  }
});

test('invalid question sets are tool errors that name the field', async () => {
  const s = await connect();
  try {
    const empty = await s.client.callTool({ name: 'ask_user_questions', arguments: { questions: [] } });
    assert.equal(empty.isError, true);
    assert.equal(text(empty), 'At least one question is required');
    const one = await s.client.callTool({ name: 'ask_user_questions', arguments: { questions: [{ question: 'q?', header: 'h', options: [{ label: 'a' }] }] } });
    assert.equal(one.isError, true);
    assert.equal(text(one), 'questions[0].options: at least 2 options are required');
  } finally {
    await s.close();
  }
});

test('with questions.timeout passed, the call is a tool error and the set is timed_out', async () => {
  const s = await connect({ QKIT_QUESTIONS_TIMEOUT: '1s' });
  try {
    const res = await s.client.callTool({ name: 'ask_user_questions', arguments: { questions } });
    assert.equal(res.isError, true);
    assert.match(text(res), /timed out waiting for the user's answer \(no answer within 1s\)/);
    const all = JSON.parse(await qkit(s.env, 'questions', 'list', '--all', '--json'));
    assert.equal(all[0].status, 'timed_out');
  } finally {
    await s.close();
  }
});
