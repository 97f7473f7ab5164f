// The page of `qkit questions serve` in a real headless Chromium (Debian's, driven by playwright-core,
// which never downloads a browser of its own), while the official TypeScript MCP client waits on
// ask_user_questions through `qkit mcp serve`: the page loads, shows a new set as soon as it is
// asked, and its answer (or rejection) is what the waiting call returns, the set's badge then saying
// how it ended; without the token it shows nothing, the cookie the browser holds (and hands to any
// other web server on 127.0.0.1) is not the token, a cross-site post is refused, a page open across
// a restart says it lost its access, a page left open when the server stops says so, the text
// fields take as many emoji as the core does, and without the script a refusal gives back what was
// typed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { isolatedEnv, qkitBin } from './env.js';

const run = promisify(execFile);
const chromiumPath = process.env.QKIT_CHROMIUM ?? '/usr/bin/chromium';
const haveChromium = existsSync(chromiumPath);
// Under make test (QKIT_REQUIRE_BROWSER; it installs Chromium first) or in CI a missing browser is a
// failure, not a skip.
const mustRun = Boolean(process.env.CI || process.env.QKIT_REQUIRE_BROWSER);
const skip = !haveChromium && !mustRun
  ? `no Chromium at ${chromiumPath}: install Debian's (apt-get install -y chromium, or make browser) or set QKIT_CHROMIUM`
  : false;

const questions = [
  { question: 'Which language should we use?', header: 'Language', multiSelect: false,
    options: [{ label: 'Go', description: 'static binary' }, { label: 'TypeScript' }] },
  { question: 'Which extras?', header: 'Extras', multiSelect: true, options: [{ label: 'Lint' }, { label: 'Docs' }] },
];
const text = (res) => res.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

let iso, serve, link, base, client, browser, context, userDataDir;

// startServe runs `qkit questions serve --json` (with any further args) and returns the process and
// its link.
async function startServe(env, args = []) {
  const proc = spawn(qkitBin, ['questions', 'serve', '--json', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const stderr = [];
  proc.stderr.on('data', (d) => stderr.push(d));
  const first = await new Promise((resolve, reject) => {
    const rl = createInterface({ input: proc.stdout });
    rl.once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`qkit questions serve exited ${code}: ${Buffer.concat(stderr)}`)));
  });
  return { proc, ...JSON.parse(first), stderr };
}

before(async () => {
  if (skip) return;
  assert.ok(haveChromium, `the browser test must run here but there is no Chromium at ${chromiumPath} (apt-get install -y chromium)`);
  const { chromium } = await import('playwright-core');
  iso = isolatedEnv();
  serve = await startServe(iso.env);
  link = serve.url;
  base = link.replace(/\?.*$/, '');
  const transport = new StdioClientTransport({ command: qkitBin, args: ['mcp', 'serve'], env: iso.env, stderr: 'pipe' });
  client = new Client({ name: 'qkit-interop-web', version: '0.0.1' });
  await client.connect(transport);
  userDataDir = mkdtempSync(join(tmpdir(), 'qkit-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  browser = context;
});

after(async () => {
  await context?.close();
  await client?.close();
  if (serve && serve.proc.exitCode === null) serve.proc.kill('SIGINT');
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  iso?.cleanup();
});

test('the page shows a new set as soon as it is asked, and its answer is what the waiting call returns', { skip }, async (t) => {
  const page = await browser.newPage();
  const res = await page.goto(link);
  assert.equal(res.status(), 200);
  assert.equal(page.url(), base, 'the token stays in the address bar');
  await page.locator('#conn', { hasText: 'Live' }).waitFor();
  assert.equal(await page.locator('section.set').count(), 0);

  const asked = Date.now();
  const call = client.callTool({ name: 'ask_user_questions', arguments: { questions } }, undefined, { timeout: 120000 });
  const set = page.locator('section.set');
  await set.waitFor({ timeout: 30000 });
  t.diagnostic(`new set shown ${Date.now() - asked} ms after the call was made`);
  assert.equal(await set.locator('input[type=radio]').count(), 2);
  assert.equal(await set.locator('input[type=checkbox]').count(), 2);

  await set.getByLabel('Go').check();
  await set.getByLabel('Docs').check();
  await set.locator('input[name=q1_other]').fill('and CI');
  assert.equal(await set.locator('.status').textContent(), 'pending');
  await set.getByRole('button', { name: 'Send answers' }).click();
  await set.locator('.msg', { hasText: 'Answer recorded' }).waitFor();
  // The badge says how the set ended, not "pending" any more.
  await set.locator('.status', { hasText: 'completed' }).waitFor();

  const out = await call;
  assert.equal(out.isError ?? false, false, text(out));
  assert.equal(text(out), "Here are the user's answers:\n\n1. [Language] Which language should we use?\n→ Go — static binary\n\n" +
    '2. [Extras] Which extras?\n→ Docs\n→ Other: "and CI"');
  await page.close();
});

test('a set answered elsewhere is closed on the open page, its badge saying how it ended', { skip }, async () => {
  const page = await browser.newPage();
  await page.goto(link);
  await page.locator('#conn', { hasText: 'Live' }).waitFor();
  const call = client.callTool({ name: 'ask_user_questions', arguments: { questions } }, undefined, { timeout: 120000 });
  const set = page.locator('section.set:not(.closed)');
  await set.waitFor({ timeout: 30000 });
  const id = await set.getAttribute('data-id');
  assert.equal(await set.locator('.status').textContent(), 'pending');
  await run(qkitBin, ['questions', 'answer', id, '--answer', '1=2', '--answer', '2=1'], { env: iso.env });
  const closed = page.locator(`#set-${id}.closed`);
  await closed.locator('.msg', { hasText: 'This question set was answered.' }).waitFor();
  assert.equal(await closed.locator('.status').textContent(), 'completed');
  assert.match(text(await call), /→ TypeScript/);
  await page.close();
});

test('the cookie the browser holds is not the token, and is worth nothing to another local server', { skip }, async () => {
  const page = await browser.newPage();
  await page.goto(link);
  await page.locator('#conn', { hasText: 'Live' }).waitFor();
  const port = new URL(base).port;
  const cookies = (await context.cookies(base)).filter((c) => c.name === `qkit_questions_${port}`);
  assert.equal(cookies.length, 1, 'the page set no cookie');
  assert.ok(cookies[0].value.length >= 32, 'the session value is too short to be a secret');
  assert.ok(!cookies[0].value.includes(serve.token) && !serve.token.includes(cookies[0].value), 'the cookie holds the token');
  assert.equal(cookies[0].httpOnly, true);
  assert.equal(cookies[0].sameSite, 'Strict');
  for (const c of await context.cookies()) {
    assert.ok(!c.value.includes(serve.token), `cookie ${c.name} holds the token`);
  }
  // A set shown to this browser carries its session's form value, not the token.
  const call = client.callTool({ name: 'ask_user_questions', arguments: { questions } }, undefined, { timeout: 120000 });
  await page.locator('section.set:not(.closed)').waitFor({ timeout: 30000 });
  const id = await page.locator('section.set:not(.closed)').getAttribute('data-id');
  const set = page.locator(`#set-${id}`);
  assert.ok(!(await page.content()).includes(serve.token), 'the page holds the token');

  // Another web server on 127.0.0.1 (another port) that the browser visits is sent the cookie:
  // what it gets is no bearer token and no link token.
  let got = '';
  const other = createServer((req, res) => {
    got = req.headers.cookie ?? '';
    res.setHeader('Content-Type', 'text/html');
    res.end('<p>another local server</p>');
  });
  await new Promise((r) => other.listen(0, '127.0.0.1', r));
  try {
    const visit = await browser.newPage();
    await visit.goto(`http://127.0.0.1:${other.address().port}/`);
    await visit.close();
  } finally {
    other.close();
  }
  assert.match(got, new RegExp(`qkit_questions_${port}=`), 'the browser did not send the page\'s cookie to the other port');
  assert.ok(!got.includes(serve.token), 'another local server received the token');
  const leaked = got.match(new RegExp(`qkit_questions_${port}=([^;]+)`))[1];
  for (const [what, req] of [
    ['as a bearer token', fetch(base, { headers: { Authorization: `Bearer ${leaked}` } })],
    ['as the link\'s token', fetch(`${base}?token=${leaked}`, { redirect: 'manual' })],
  ]) {
    const r = await req;
    assert.equal(r.status, 401, `the cookie's value ${what}`);
    assert.ok(!(await r.text()).includes(serve.token));
  }
  const ans = await fetch(`${base}sets/${id}/answer`, {
    method: 'POST', body: new URLSearchParams({ csrf: leaked, q0: 'Go' }),
    headers: { Authorization: `Bearer ${leaked}`, Accept: 'application/json' },
  });
  assert.equal(ans.status, 401, 'the cookie\'s value answered as a bearer token');

  await set.getByLabel('Go').check();
  await set.getByRole('button', { name: 'Send answers' }).click();
  await set.locator('.msg', { hasText: 'Answer recorded' }).waitFor();
  assert.match(text(await call), /→ Go/);
  await page.close();
});

test('without the token the page shows nothing but how to get in', { skip }, async () => {
  const page = await browser.newPage();
  await context.clearCookies();
  let res = await page.goto(base);
  assert.equal(res.status(), 401);
  assert.match(await page.textContent('body'), /needs the link that qkit questions serve printed/);
  res = await page.goto(base + '?token=0000');
  assert.equal(res.status(), 401);
  assert.match(await page.textContent('body'), /Wrong token/);
  assert.equal(await page.locator('section.set').count(), 0);
  await page.goto(link); // in again, for the tests that follow
  await page.close();
});

test('a cross-site post is refused; the set is then rejected on the page, with a reason', { skip }, async () => {
  const call = client.callTool({ name: 'ask_user_questions', arguments: { questions } }, undefined, { timeout: 120000 });
  const page = await browser.newPage();
  await page.goto(base);
  const set = page.locator('section.set:not(.closed)');
  await set.waitFor();
  const id = await set.getAttribute('data-id');

  // Another site (localhost is another site than 127.0.0.1) posts a form to the page, with the
  // right token even: the browser marks it cross-site and the page refuses it.
  const evil = createServer((req, res) => {
    res.setHeader('Content-Type', 'text/html');
    res.end(`<form id=f method=post action="${base}sets/${id}/answer">
      <input name=csrf value="${serve.token}"><input name=q0 value=TypeScript><input name=q1 value=Lint></form>
      <script>document.getElementById('f').submit()</script>`);
  });
  await new Promise((r) => evil.listen(0, '127.0.0.1', r));
  try {
    const attack = await browser.newPage();
    const refused = attack.waitForResponse((r) => r.url().includes(`/sets/${id}/answer`));
    await attack.goto(`http://localhost:${evil.address().port}/`);
    const r = await refused;
    assert.equal(r.status(), 403);
    assert.match(await r.text(), /came from another site/);
    await attack.close();
  } finally {
    evil.close();
  }
  const shown = JSON.parse((await run(qkitBin, ['questions', 'show', id, '--json'], { env: iso.env })).stdout);
  assert.equal(shown.status, 'pending', 'the cross-site post changed the set');

  await set.getByText('Reject these questions…').click();
  await set.locator('textarea[name=reason]').fill('Ask me after the release');
  await set.getByRole('button', { name: 'Reject', exact: true }).click();
  await page.locator(`#set-${id} .msg`, { hasText: 'Rejected' }).waitFor();
  const out = await call;
  assert.equal(text(out), 'User rejected this question set.\n\nRejection reason: "Ask me after the release"');
  await page.close();
});

// A browser counts maxlength in UTF-16 units, two for an emoji; the core counts characters. The
// person can type as many emoji as the core takes (the browser stops them there, no earlier);
// ordinary text over the core's limit reaches the core, which refuses it with its message, and the
// page keeps what was typed.
test('the page takes as many emoji as the core does, and keeps a reason the core refuses', { skip }, async () => {
  const call = client.callTool({ name: 'ask_user_questions', arguments: { questions } }, undefined, { timeout: 120000 });
  const page = await browser.newPage();
  await page.goto(base);
  const set = page.locator('section.set:not(.closed)');
  await set.waitFor();
  const id = await set.getAttribute('data-id');
  const typed = async (field, value) => {
    await field.focus();
    await page.keyboard.insertText(value); // as typing or pasting: the browser applies maxlength
    return [...await field.inputValue()].length;
  };
  const other = set.locator('input[name=q0_other]');
  assert.equal(await typed(other, '😀'.repeat(10001)), 10000, 'free text in emoji stopped elsewhere than at the core\'s limit');
  await other.fill('');

  await set.getByText('Reject these questions…').click();
  const reason = set.locator('textarea[name=reason]');
  const over = 'x'.repeat(2001);
  await typed(reason, over);
  await set.getByRole('button', { name: 'Reject', exact: true }).click();
  await set.locator('.msg', { hasText: 'reason: at most 2000 characters, not 2001' }).waitFor();
  assert.equal(await reason.inputValue(), over, 'the refused reason was lost');
  assert.equal(JSON.parse((await run(qkitBin, ['questions', 'show', id, '--json'], { env: iso.env })).stdout).status, 'pending');

  await reason.fill('');
  assert.equal(await typed(reason, '😀'.repeat(2001)), 2000, 'a reason in emoji stopped elsewhere than at the core\'s limit');
  await set.getByRole('button', { name: 'Reject', exact: true }).click();
  await page.locator(`#set-${id} .msg`, { hasText: 'Rejected' }).waitFor();
  assert.equal(text(await call), `User rejected this question set.\n\nRejection reason: "${'😀'.repeat(2000)}"`);
  await page.close();
});

// Without the script (here it does not load), the forms post as plain forms and a refusal answers
// with the page again: what the person typed is back in the fields as the browser reads them (a
// reason's leading line break too), the options chosen still checked, the core's message at the set.
test('without the script, a refused answer or reason comes back filled in', { skip }, async () => {
  const call = client.callTool({ name: 'ask_user_questions', arguments: { questions } }, undefined, { timeout: 120000 });
  const page = await browser.newPage();
  await page.route('**/app.js', (route) => route.abort());
  await page.goto(base);
  let set = page.locator('section.set:not(.closed)');
  await set.first().waitFor({ timeout: 30000 });
  const id = await set.last().getAttribute('data-id');
  set = page.locator(`#set-${id}`);

  const other = `${'x'.repeat(10001)} </textarea><b>mine</b> "&"`;
  await set.locator('input[name=q0_other]').fill(other);
  await set.getByLabel('Lint').check();
  const [res] = await Promise.all([page.waitForNavigation(), set.getByRole('button', { name: 'Send answers' }).click()]);
  assert.equal(res.status(), 400);
  await set.locator('.msg', { hasText: 'at most 10000 characters' }).waitFor();
  assert.equal(await set.locator('input[name=q0_other]').inputValue(), other, 'the free text was lost');
  assert.equal(await set.getByLabel('Lint').isChecked(), true, 'the option chosen was lost');
  assert.equal(await page.locator('b', { hasText: 'mine' }).count(), 0, 'the typed text became markup');

  const reason = `\nWhy: <i>later</i>\n${'y'.repeat(2001)}`;
  await set.getByText('Reject these questions…').click();
  await set.locator('textarea[name=reason]').fill(reason);
  const [again] = await Promise.all([page.waitForNavigation(), set.getByRole('button', { name: 'Reject', exact: true }).click()]);
  assert.equal(again.status(), 400);
  await set.locator('.msg', { hasText: 'reason: at most 2000 characters' }).waitFor();
  assert.equal(await set.locator('textarea[name=reason]').inputValue(), reason, 'the reason was lost');
  assert.equal(JSON.parse((await run(qkitBin, ['questions', 'show', id, '--json'], { env: iso.env })).stdout).status, 'pending');

  await set.locator('textarea[name=reason]').fill('Not now');
  await Promise.all([page.waitForNavigation(), set.getByRole('button', { name: 'Reject', exact: true }).click()]);
  await page.getByText('Rejected. The assistant has been told.').waitFor();
  assert.equal(text(await call), 'User rejected this question set.\n\nRejection reason: "Not now"');
  await page.close();
});

test('a page open while the server restarts with a new link says it lost its access', { skip }, async () => {
  const page = await browser.newPage();
  await page.goto(base);
  await page.locator('#conn', { hasText: 'Live' }).waitFor();
  // Killed without the goodbye a stopped server sends, then started again on the same port: the
  // new server has a new token, so the page's cookie no longer opens the event stream.
  const exited = new Promise((r) => serve.proc.once('exit', r));
  serve.proc.kill('SIGKILL');
  await exited;
  serve = await startServe(iso.env, ['--addr', new URL(base).host]);
  assert.equal(serve.url.replace(/\?.*$/, ''), base);
  assert.notEqual(serve.url, link, 'the restarted server kept its token');
  link = serve.url;
  await page.locator('#conn', { hasText: 'This page lost its access: qkit questions serve restarted or the link is no longer valid. Open the new link it printed.' })
    .waitFor({ timeout: 30000 });
  // The new link lets the page in again.
  await page.goto(link);
  await page.locator('#conn', { hasText: 'Live' }).waitFor();
  await page.close();
});

test('a page left open when the server stops says so, and keeps an unsent answer', { skip }, async () => {
  const call = client.callTool({ name: 'ask_user_questions', arguments: { questions } }, undefined, { timeout: 120000 });
  const page = await browser.newPage();
  await page.goto(base);
  const set = page.locator('section.set:not(.closed)');
  await set.waitFor();
  await set.getByLabel('TypeScript').check();
  await set.getByLabel('Lint').check();
  const exited = new Promise((r) => serve.proc.once('exit', r));
  serve.proc.kill('SIGINT');
  await exited;
  await page.locator('#conn', { hasText: /stopped|lost/ }).waitFor();
  await set.getByRole('button', { name: 'Send answers' }).click();
  await set.locator('.msg', { hasText: 'NOT sent' }).waitFor();
  assert.equal(await set.getByLabel('TypeScript').isChecked(), true, 'the answer typed in was lost');

  // Nothing was lost on the store's side either: the set waits, and a terminal can still answer.
  await run(qkitBin, ['questions', 'answer', '--answer', '1=TypeScript', '--answer', '2=Lint'], { env: iso.env });
  const out = await call;
  assert.match(text(out), /→ TypeScript/);
  await page.close();
});
