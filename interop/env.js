// Shared set-up for the interop suites: where the qkit binary and the fake q are, and a private,
// throwaway home for each test so nothing touches the developer's own settings.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const qkitBin = process.env.QKIT_BIN ?? new URL('../bin/qkit', import.meta.url).pathname;
export const fakeqDir = process.env.FAKEQ_DIR ?? new URL('../bin/fakeq', import.meta.url).pathname;

// isolatedEnv returns an environment for a qkit child process with its own QKIT_HOME, the fake q
// first on PATH, and any extra variables. cleanup() removes the home.
export function isolatedEnv(extra = {}) {
  const home = mkdtempSync(join(tmpdir(), 'qkit-interop-'));
  const env = {
    PATH: `${fakeqDir}:${process.env.PATH}`,
    HOME: home,
    QKIT_HOME: join(home, '.qkit'),
    ...extra,
  };
  return { env, home, cleanup: () => rmSync(home, { recursive: true, force: true }) };
}
