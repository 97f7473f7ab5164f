// qkit ask on the ACP backend against a second stand-in agent written with the official TypeScript
// SDK's agent side (stand-in-agent.js), so qkit's ACP client is proven against an implementation
// other than the Go SDK it is built on: typed events, permissions answered without re-running
// anything (and qkit's own memory of "allow always"), fs/* and terminal/* served inside the working
// directory, a refusal the agent carries on from.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { isolatedEnv, qkitBin } from './env.js';

const agentPath = new URL('./stand-in-agent.js', import.meta.url).pathname;

// ask runs `qkit ask --backend acp --output-format stream-json` in a fresh project folder and
// returns its exit status, stderr and the parsed lines.
function ask(iso, cwd, extraArgs, extraEnv = {}) {
  const r = spawnSync(qkitBin, ['ask', '--no-context', '--backend', 'acp', '--output-format', 'stream-json', ...extraArgs, 'do it'], {
    cwd, env: { ...iso.env, QKIT_AGENT_COMMAND: agentPath, ...extraEnv }, encoding: 'utf8', timeout: 60_000,
  });
  const lines = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  return { status: r.status, stderr: r.stderr, lines, result: lines.at(-1) };
}

test('ask streams the TS agent\'s events and serves its files and terminals', () => {
  const iso = isolatedEnv();
  try {
    const cwd = mkdtempSync(join(iso.home, 'project-'));
    writeFileSync(join(cwd, 'notes.txt'), 'my notes\n');
    const ran = join(iso.home, 'ran');
    const { status, stderr, lines, result } = ask(iso, cwd, ['--yolo'], {
      TS_AGENT_TOOLS: 'echo one', TS_AGENT_READ: 'notes.txt', TS_AGENT_WRITE: 'out.txt', TS_AGENT_RAN: ran,
    });
    assert.equal(status, 0, stderr);
    const types = new Set(lines.map((l) => l.type));
    for (const t of ['thought', 'plan', 'tool_call', 'tool_call_update', 'message', 'usage', 'result']) {
      assert.ok(types.has(t), `no ${t} line in ${[...types]}`);
    }
    assert.equal(result.type, 'result');
    assert.equal(result.backend, 'acp');
    assert.equal(result.session_id, 'ts-1');
    assert.equal(result.stop_reason, 'end_turn');
    assert.equal(result.output, 'chunk 1 of do it\nchunk 2 of do it\nchunk 3 of do it\n');
    assert.deepEqual(result.tools.map((t) => [t.title, t.kind, t.status]), [
      ['Running: echo one', 'execute', 'completed'],
      ['Read notes.txt', 'read', 'completed'],
      ['Write out.txt', 'edit', 'completed'],
    ]);
    // The shell ran in qkit's terminal, the file came from qkit's fs/read_text_file.
    const outputs = lines.filter((l) => l.type === 'tool_call_update' && l.tool.status === 'completed').map((l) => l.tool.output);
    assert.ok(outputs.includes('one\n'), outputs);
    assert.ok(outputs.includes('my notes\n'), outputs);
    assert.equal(readFileSync(join(cwd, 'out.txt'), 'utf8'), 'written by the ts agent\n');
    assert.equal(readFileSync(ran, 'utf8'), 'echo one\n');
    // -a went to the agent, so it did not ask.
    assert.ok(!types.has('permission_requested'));
  } finally {
    iso.cleanup();
  }
});

test('an agent that asks again after "allow always" is answered from qkit\'s memory; each tool runs once', async () => {
  const iso = isolatedEnv();
  try {
    const cwd = mkdtempSync(join(iso.home, 'project-'));
    const ran = join(iso.home, 'ran');
    const env = { ...iso.env, QKIT_AGENT_COMMAND: agentPath, TS_AGENT_TOOLS: 'echo a,echo b,echo c', TS_AGENT_RAN: ran };
    const proc = spawn(qkitBin, ['ask', '--no-context', '--backend', 'acp', '--on-permission', 'ask', '--output-format', 'stream-json', 'go'],
      { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d) => { out += d; });
    proc.stderr.on('data', (d) => { err += d; });
    const exited = new Promise((resolve) => proc.on('exit', resolve));
    // A person answers through qkit questions.
    const waited = spawnSync(qkitBin, ['questions', 'wait', '--json', '--timeout', '30s'], { env, encoding: 'utf8' });
    assert.equal(waited.status, 0, waited.stderr);
    const set = JSON.parse(waited.stdout);
    assert.match(set.questions[0].question, /The agent asks to run "Running: echo a" \(execute\)/);
    const answered = spawnSync(qkitBin, ['questions', 'answer', set.id, '--answer', '1=Allow always (this run)'], { env, encoding: 'utf8' });
    assert.equal(answered.status, 0, answered.stderr);
    assert.equal(await exited, 0, err);
    const lines = out.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const decided = lines.filter((l) => l.type === 'permission_decided').map((l) => [l.permission.decision, l.permission.decided_by]);
    assert.deepEqual(decided, [['allow_always', 'person'], ['allow_always', 'policy'], ['allow_always', 'policy']]);
    assert.equal(readFileSync(ran, 'utf8'), 'echo a\necho b\necho c\n');
  } finally {
    iso.cleanup();
  }
});

test('a denied tool is refused and the TS agent carries on; a path outside the folder is refused and fails the run', () => {
  const iso = isolatedEnv();
  try {
    const cwd = mkdtempSync(join(iso.home, 'project-'));
    writeFileSync(join(iso.home, 'secret.txt'), 'secret');
    const ran = join(iso.home, 'ran');
    const { status, stderr, lines, result } = ask(iso, cwd, ['--on-permission', 'deny'], {
      TS_AGENT_TOOLS: 'echo nope', TS_AGENT_READ: '../secret.txt', TS_AGENT_RAN: ran,
    });
    // The refused path fails the run (exit 1); the reply and the result are kept.
    assert.equal(status, 1, stderr);
    assert.equal(result.stop_reason, 'end_turn');
    assert.equal(result.exit_code, 1);
    assert.equal(result.is_error, true);
    assert.match(result.error, /outside the working directory .*, which was refused: read .*secret\.txt$/);
    assert.deepEqual(result.denied, ['"Running: echo nope" (execute)']);
    assert.deepEqual(result.refused_paths, [join(iso.home, 'secret.txt')]);
    assert.match(stderr, /refused to read .*secret\.txt: it is outside the working directory/);
    assert.ok(!existsSync(ran), 'the denied tool ran');
    assert.ok(!lines.some((l) => l.type === 'tool_call_update' && l.tool.output === 'secret'));
    assert.equal(result.output.split('\n').filter(Boolean).length, 3);
  } finally {
    iso.cleanup();
  }
});

test('--on-permission fail stops the turn, names the tool and the flag, exit 1', () => {
  const iso = isolatedEnv();
  try {
    const cwd = mkdtempSync(join(iso.home, 'project-'));
    const { status, stderr, result } = ask(iso, cwd, [], { TS_AGENT_TOOLS: 'echo x' });
    assert.equal(status, 1);
    assert.match(stderr, /the agent asked to run "Running: echo x" \(execute\), which needs permission.*--trust-tools shell/);
    assert.equal(result.exit_code, 1);
    assert.equal(result.is_error, true);
  } finally {
    iso.cleanup();
  }
});

test('a write the TS agent sends without asking permission is refused unless the policy allows it', () => {
  const iso = isolatedEnv();
  try {
    const cwd = mkdtempSync(join(iso.home, 'project-'));
    // The default policy (fail, no terminal): the agent gets an error, its tool call fails, the
    // run fails naming the flag; nothing is written.
    let { status, stderr, lines, result } = ask(iso, cwd, [], { TS_AGENT_WRITE: 'out.txt' });
    assert.equal(status, 1, stderr);
    assert.ok(!existsSync(join(cwd, 'out.txt')), 'the refused write was served');
    const failed = lines.find((l) => l.type === 'tool_call_update' && l.tool.title === 'Write out.txt');
    assert.equal(failed.tool.status, 'failed');
    assert.match(failed.tool.output, /refused to write .*out\.txt: the agent did not ask permission for it \(fs\/write_text_file\)/);
    assert.deepEqual(result.refused_requests, [`write ${join(cwd, 'out.txt')}`]);
    assert.equal(result.exit_code, 1);
    assert.match(stderr, /run again with --trust-tools write \(or --yolo/);
    // --trust-tools write allows it.
    ({ status, stderr, result } = ask(iso, cwd, ['--trust-tools', 'write'], { TS_AGENT_WRITE: 'out.txt' }));
    assert.equal(status, 0, stderr);
    assert.equal(readFileSync(join(cwd, 'out.txt'), 'utf8'), 'written by the ts agent\n');
    assert.equal(result.refused_requests, undefined);
  } finally {
    iso.cleanup();
  }
});
