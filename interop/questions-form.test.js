// ask_user_questions put to the person in the client's own form (elicitation), with the official
// TypeScript MCP client (protocol 2025-11-25: the server asks while the call waits): the form's
// answer is the call's result, and when a terminal answers first the form is withdrawn.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { isolatedEnv, qkitBin } from './env.js';

const run = promisify(execFile);
const text = (res) => res.content.filter((c) => c.type === 'text').map((c) => c.text).join('');
const questions = [
  { question: 'Which language should we use?', header: 'Language', multiSelect: false,
    options: [{ label: 'Go', description: 'static binary' }, { label: 'TypeScript' }] },
  { question: 'Which extras?', header: 'Extras', multiSelect: true, options: [{ label: 'Lint' }, { label: 'Docs' }] },
];

async function connect(onForm) {
  const iso = isolatedEnv();
  const client = new Client({ name: 'qkit-interop-form', version: '0.0.1' }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, onForm);
  await client.connect(new StdioClientTransport({ command: qkitBin, args: ['mcp', 'serve'], env: iso.env, stderr: 'pipe' }));
  return { client, env: iso.env, close: async () => { await client.close(); iso.cleanup(); } };
}

test("the answer given in the client's own form is the call's result", async () => {
  let schema;
  const s = await connect(async (req) => {
    schema = req.params.requestedSchema;
    return { action: 'accept', content: { q1: 'Go', q2: ['Lint', 'Docs'], q2_other: 'and CI' } };
  });
  try {
    const res = await s.client.callTool({ name: 'ask_user_questions', arguments: { questions } });
    assert.equal(res.isError ?? false, false, text(res));
    assert.equal(text(res), "Here are the user's answers:\n\n1. [Language] Which language should we use?\n→ Go — static binary\n\n" +
      '2. [Extras] Which extras?\n→ Lint\n→ Docs\n→ Other: "and CI"');
    assert.deepEqual(schema.properties.q1.enum, ['Go', 'TypeScript']);
    assert.equal(schema.properties.q2.type, 'array');
    assert.equal(res.structuredContent.status, 'completed');
  } finally {
    await s.close();
  }
});

test('a terminal that answers first wins, and the form is withdrawn', async () => {
  let shown;
  const formShown = new Promise((r) => { shown = r; });
  let withdrawn;
  const formWithdrawn = new Promise((r) => { withdrawn = r; });
  const s = await connect((req, extra) => new Promise((resolve) => {
    shown();
    extra.signal.addEventListener('abort', () => { withdrawn(); resolve({ action: 'cancel' }); });
  }));
  try {
    const call = s.client.callTool({ name: 'ask_user_questions', arguments: { questions } });
    await formShown;
    await run(qkitBin, ['questions', 'answer', '--answer', '1=TypeScript', '--answer', '2=Lint'], { env: s.env });
    const res = await call;
    assert.match(text(res), /→ TypeScript/);
    await formWithdrawn;
  } finally {
    await s.close();
  }
});
