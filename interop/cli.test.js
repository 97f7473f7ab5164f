// The binary the other suites drive is the one `make build` produced, and it starts cleanly in an
// isolated home: a broken build or a stray config would otherwise show up as protocol failures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { isolatedEnv, qkitBin } from './env.js';

test('qkit version --json reports a version', () => {
  const { env, cleanup } = isolatedEnv();
  try {
    const out = JSON.parse(execFileSync(qkitBin, ['version', '--json'], { env }).toString());
    assert.equal(typeof out.version, 'string');
    assert.match(out.go, /^go1\./);
  } finally {
    cleanup();
  }
});
