// The editor side shared by the acp serve suites: `qkit acp serve` started with an environment,
// the official ACP client SDK (@agentclientprotocol/sdk) connected to it, and a recording editor.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk';
import { isolatedEnv, qkitBin } from './env.js';

const m = acp.methods;

// serveACP starts `qkit acp serve` with extra environment in home (a fresh one, removed after,
// unless given), connects the SDK's client and runs op(agent, editor). editor records
// session/update notifications, answers permission requests with editor.answer (allow once by
// default) and fs/read_text_file from fs (path -> text, the editor's unsaved buffers).
export async function serveACP(extra, op, { home, fs } = {}) {
  const iso = isolatedEnv({ QKIT_ACP_ENABLED: 'true', ...extra });
  if (home) {
    iso.env.HOME = home;
    iso.env.QKIT_HOME = join(home, '.qkit');
  }
  const proc = spawn(qkitBin, ['acp', 'serve'], { env: iso.env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  const editor = {
    updates: [],
    asked: [],
    reads: [],
    buffers: fs ?? {},
    answer: () => ({ outcome: { outcome: 'selected', optionId: 'allow_once' } }),
    of(sessionId, kind) {
      return this.updates.filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === kind).map((u) => u.update);
    },
    text(sessionId, kind = 'agent_message_chunk') {
      return this.of(sessionId, kind).map((u) => u.content.text).join('');
    },
    toolText(sessionId, toolCallId) {
      return this.of(sessionId, 'tool_call_update').filter((u) => u.toolCallId === toolCallId && u.content)
        .flatMap((u) => u.content).filter((c) => c.type === 'content').map((c) => c.content.text).join('');
    },
    waitFor(cond) {
      return new Promise((resolve, reject) => {
        const deadline = Date.now() + 60_000;
        const tick = () => {
          if (cond()) return resolve();
          if (Date.now() > deadline) return reject(new Error('timed out waiting'));
          setTimeout(tick, 10);
        };
        tick();
      });
    },
  };
  const app = acp.client({ name: 'qkit-interop' })
    .onNotification(m.client.session.update, ({ params }) => { editor.updates.push(params); })
    .onRequest(m.client.session.requestPermission, (ctx) => {
      editor.asked.push(ctx.params);
      return editor.answer(ctx);
    })
    .onRequest(m.client.fs.readTextFile, ({ params }) => {
      editor.reads.push(params);
      if (!(params.path in editor.buffers)) throw acp.RequestError.resourceNotFound(params.path);
      return { content: editor.buffers[params.path] };
    });
  const stream = acp.ndJsonStream(Writable.toWeb(proc.stdin), Readable.toWeb(proc.stdout));
  try {
    return await app.connectWith(stream, (agent) => op(agent, editor));
  } catch (e) {
    e.message += `\nqkit stderr:\n${stderr}`;
    throw e;
  } finally {
    proc.kill();
    await exited;
    if (!home) iso.cleanup();
  }
}
