// Shared set-up for the interop suites: where the qkit binary and the fake q are, and a private,
// throwaway home for each test so nothing touches the developer's own settings.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const qkitBin = process.env.QKIT_BIN ?? new URL('../bin/qkit', import.meta.url).pathname;
export const fakeqDir = process.env.FAKEQ_DIR ?? new URL('../bin/fakeq', import.meta.url).pathname;

// flavour is the agent the fake imitates in this run of the suites (FAKEQ_FLAVOUR: q for q 1.19.7,
// kiro for kiro-cli 2.x, empty for the bare mechanics); `make interop` runs every suite once per
// flavour. agentCommand is the binary qkit runs for it (kiro-cli is the same fake under that name).
export const flavour = process.env.FAKEQ_FLAVOUR ?? '';
export const agentCommand = flavour === 'kiro' ? 'kiro-cli' : 'q';

// isolatedEnv returns an environment for a qkit child process with its own QKIT_HOME, the fake q
// (and kiro-cli) first on PATH, the run's flavour, and any extra variables. cleanup() removes the
// home.
export function isolatedEnv(extra = {}) {
  const home = mkdtempSync(join(tmpdir(), 'qkit-interop-'));
  const env = {
    PATH: `${fakeqDir}:${process.env.PATH}`,
    HOME: home,
    QKIT_HOME: join(home, '.qkit'),
    FAKEQ_FLAVOUR: flavour,
    QKIT_AGENT_COMMAND: agentCommand,
    ...extra,
  };
  return { env, home, cleanup: () => rmSync(home, { recursive: true, force: true }) };
}
