// internal_command driven by the official TypeScript MCP client over stdio. The TS SDK
// negotiates 2025-11-25, so a change is confirmed through server-initiated elicitation/create (the Go
// SDK's multi-round-trip fallback), which is what most clients in the field see.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { agentCommand, isolatedEnv, qkitBin } from './env.js';

// connect starts `qkit mcp serve`; answer (accept|decline|cancel) installs an elicitation handler.
async function connect(env, answer) {
  const capabilities = answer ? { elicitation: { form: {} } } : {};
  const client = new Client({ name: 'qkit-interop', version: '0.0.1' }, { capabilities });
  const asked = [];
  if (answer) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params.message);
      return { action: answer };
    });
  }
  await client.connect(new StdioClientTransport({ command: qkitBin, args: ['mcp', 'serve'], env, stderr: 'pipe' }));
  return { client, asked };
}

const setTimeout5m = { command: 'settings', subcommand: 'set', args: ['agent.timeout', '5m'] };

function setting(env, key) {
  return execFileSync(qkitBin, ['settings', 'get', key], { env }).toString().trim();
}

function text(res) {
  return res.content.map((c) => c.text ?? '').join('');
}

test('internal_command is listed with a description generated from the registry', async () => {
  const { env, cleanup } = isolatedEnv();
  const { client } = await connect(env);
  try {
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === 'internal_command');
    assert.ok(tool, 'internal_command listed');
    assert.deepEqual(tool.inputSchema.required, ['command']);
    assert.equal(tool.inputSchema.properties.args.type, 'array');
    assert.match(tool.description, /- settings set \(change\): /);
    assert.match(tool.description, /"Add this file to my context" -> command="context", subcommand="add"/);
  } finally {
    await client.close();
    cleanup();
  }
});

test('a read runs at once, without elicitation', async () => {
  const { env, cleanup } = isolatedEnv();
  const { client } = await connect(env);
  try {
    const res = await client.callTool({ name: 'internal_command', arguments: { command: 'settings', subcommand: 'get', args: ['agent.command'] } });
    assert.equal(res.isError ?? false, false);
    assert.equal(text(res), `${agentCommand}\n`);
  } finally {
    await client.close();
    cleanup();
  }
});

test('unknown commands are refused with the available ones', async () => {
  const { env, cleanup } = isolatedEnv();
  const { client } = await connect(env);
  try {
    const res = await client.callTool({ name: 'internal_command', arguments: { command: 'quit' } });
    assert.equal(res.isError, true);
    assert.match(text(res), /^Unknown command: quit\. Available commands: .*settings/);
  } finally {
    await client.close();
    cleanup();
  }
});

test('a change without elicitation support is a tool error naming the command', async () => {
  const { env, cleanup } = isolatedEnv();
  const { client } = await connect(env);
  try {
    const res = await client.callTool({ name: 'internal_command', arguments: setTimeout5m });
    assert.equal(res.isError, true);
    assert.match(text(res), /"qkit settings set agent\.timeout 5m" changes state and needs the user's confirmation/);
    assert.equal(setting(env, 'agent.timeout'), '180s');
  } finally {
    await client.close();
    cleanup();
  }
});

for (const answer of ['accept', 'decline', 'cancel']) {
  test(`a change asks through elicitation: ${answer}`, async () => {
    const { env, cleanup } = isolatedEnv();
    const { client, asked } = await connect(env, answer);
    try {
      const res = await client.callTool({ name: 'internal_command', arguments: setTimeout5m });
      assert.equal(asked.length, 1);
      assert.match(asked[0], /"qkit settings set agent\.timeout 5m"/);
      if (answer === 'accept') {
        assert.equal(res.isError ?? false, false, text(res));
        assert.equal(setting(env, 'agent.timeout'), '5m');
      } else if (answer === 'decline') {
        assert.equal(res.isError, true);
        assert.match(text(res), /The user declined to run "qkit settings set agent\.timeout 5m"/);
        assert.equal(setting(env, 'agent.timeout'), '180s');
      } else {
        assert.equal(res.isError, true);
        assert.match(text(res), /The question whether to run "qkit settings set agent\.timeout 5m" was cancelled before the user answered/);
        assert.equal(setting(env, 'agent.timeout'), '180s');
      }
      const audit = readFileSync(join(env.QKIT_HOME, 'state', 'audit.log'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      assert.equal(audit.length, 1);
      assert.equal(audit[0].source, 'mcp');
      assert.equal(audit[0].confirmed, answer === 'accept');
      assert.equal(audit[0].declined ?? false, answer === 'decline');
      assert.equal(audit[0].interrupted ?? false, answer === 'cancel');
    } finally {
      await client.close();
      cleanup();
    }
  });
}
