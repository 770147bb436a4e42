import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import WebSocket from 'ws';
import { repoRoot } from '../../../scripts/stack/binaries';
import { launchBrowser, requireBuiltConsole, signInWithKey, type TestBrowser } from '../../helpers/browser';
import { unique } from '../../helpers/platform';
import { startReferenceSdkPlatform, type ReferenceSdkPlatform } from '../../helpers/reference-sdk';
import { eventually } from '../../helpers/workers';
import { deployJobCode } from '../jobs/helpers';

/**
 * The console in a real browser (Debian's chromium, headless) against the platform listening on
 * ports: the API with the console's files, the sandbox gateway and the workers, as npm start runs
 * them. HANGAR_CONSOLE_SCREENSHOTS=<folder> also saves the README's screenshots there.
 */

let p: ReferenceSdkPlatform;
let browser: TestBrowser;
let origin: string;
const screenshots = process.env.HANGAR_CONSOLE_SCREENSHOTS;
const TEMPORAL_UI = 'http://temporal-ui.test:8233';

beforeAll(async () => {
  requireBuiltConsole();
  p = await startReferenceSdkPlatform('console', { temporalUiUrl: TEMPORAL_UI });
  origin = `http://127.0.0.1:${(p.t.app.server.address() as { port: number }).port}`;
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await p?.stop();
}, 60_000);

async function newPage(): Promise<Page> {
  return browser.context.newPage();
}

async function screenshot(page: Page, name: string): Promise<void> {
  if (screenshots) await page.screenshot({ path: path.resolve(repoRoot(), screenshots, `${name}.png`) });
}

describe('the console files', () => {
  it('serves index.html for its pages (not cached) and hashed assets with their type, cached for good', async () => {
    const index = await fetch(`${origin}/console/resources/sandboxes`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    // Nothing from elsewhere may load (the console bundles all it uses), and nothing may frame it.
    expect(index.headers.get('content-security-policy')).toMatch(/^default-src 'self'; script-src 'self';.*frame-ancestors 'none'/);
    const html = await index.text();
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    const style = /href="(\/console\/assets\/[^"]+\.css)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    for (const [asset, type] of [[script, 'text/javascript; charset=utf-8'], [style, 'text/css; charset=utf-8']]) {
      const answer = await fetch(`${origin}${asset}`);
      expect([answer.status, answer.headers.get('content-type'), answer.headers.get('cache-control')]).toEqual([200, type, 'public, max-age=31536000, immutable']);
    }
    expect((await fetch(`${origin}/console/assets/missing-0123456789.js`)).status).toBe(404);
    expect((await fetch(`${origin}/console`, { redirect: 'manual' })).headers.get('location')).toBe('/console/');
  });

  it('never serves a file outside dist/console', async () => {
    const secret = fs.readFileSync(path.join(repoRoot(), 'package.json'), 'utf8');
    for (const attempt of ['/console/..%2f..%2fpackage.json', '/console/%2e%2e/%2e%2e/package.json', '/console/assets/..%2f..%2f..%2fpackage.json']) {
      const answer = await fetch(`${origin}${attempt}`);
      expect(await answer.text()).not.toBe(secret);
    }
  });

  it('refuses a terminal relay without a valid sandbox name, naming the field', async () => {
    const answer = await fetch(`${origin}/console/sandbox-files/${p.tenant.workspace}/Bad_Name/`, { headers: { authorization: `Bearer ${p.tenant.admin.apiKey}` } });
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { message: string }).message).toContain("'sandbox'");
  });
});

describe('sign-in', () => {
  it('refuses a bad key and shows why, without signing in', async () => {
    const page = await newPage();
    await page.goto(`${origin}/console/`);
    await page.getByLabel('API key', { exact: true }).fill('hk_not-a-real-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/^Sign-in refused: /);
    expect(await page.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    await screenshot(page, 'console-sign-in');
    await page.close();
  });

  it('signs in with an API key exchanged for a token, kept in memory only (a reload signs out), and signs out', async () => {
    const page = await newPage();
    // After the exchange at the token endpoint, the page's calls carry the short-lived token, never the key.
    const credentials: string[] = [];
    page.on('request', (request) => {
      const authorization = request.headers()['authorization'];
      if (authorization && new URL(request.url()).pathname.startsWith('/v0/')) credentials.push(authorization);
    });
    await signInWithKey(page, `${origin}/console/resources/sandboxes`, p.tenant.admin.apiKey);
    await expect(page.getByRole('combobox', { name: 'Workspace' }).inputValue()).resolves.toBe(p.tenant.workspace);
    expect(credentials.length).toBeGreaterThan(0);
    for (const credential of credentials) expect(credential).toMatch(/^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
    const stored = await page.evaluate(() => JSON.stringify([{ ...(globalThis as any).localStorage }, { ...(globalThis as any).sessionStorage }, (globalThis as any).document.cookie]));
    expect(stored).not.toContain(p.tenant.admin.apiKey);
    await page.reload();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await signInWithKey(page, `${origin}/console/`, p.tenant.admin.apiKey);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.close();
  });

  it("signs in with a service account's client credentials, exchanged for an access token", async () => {
    const page = await newPage();
    await page.goto(`${origin}/console/resources/agents`);
    await page.getByLabel('service-account credentials').check();
    await page.getByLabel('Client id').fill(p.tenant.admin.clientId);
    await page.getByLabel('Client secret').fill('wrong-secret');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toMatch(/^Sign-in refused: /);
    await page.getByLabel('Client secret').fill(p.tenant.admin.clientSecret);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Resources' }).waitFor();
    await page.close();
  });
});

describe('a sandbox', () => {
  const name = unique('console-box');

  beforeAll(async () => {
    const created = await p.t.call(p.tenant.admin.apiKey, { method: 'POST', url: '/v0/sandboxes', workspace: p.tenant.workspace, payload: { metadata: { name }, spec: { runtime: { memory: 256 } } } });
    expect(created.statusCode).toBe(200);
    await eventually(`${name} DEPLOYED`, async () => {
      const got = await p.t.call(p.tenant.admin.apiKey, { method: 'GET', url: `/v0/sandboxes/${name}`, workspace: p.tenant.workspace });
      const status = (got.json() as { status: string }).status;
      if (status === 'FAILED') throw new Error(`${name} FAILED`);
      return status === 'DEPLOYED' ? true : undefined;
    }, 90_000);
  }, 120_000);

  it('is listed with its state, memory and a link to its workflow in the Temporal UI', async () => {
    const page = await newPage();
    await signInWithKey(page, `${origin}/console/resources/sandboxes`, p.tenant.admin.apiKey);
    const row = page.locator(`tr[data-name="${name}"]`);
    await row.waitFor();
    await expect(row.innerText()).resolves.toMatch(/DEPLOYED\s+(RUNNING|STANDBY)\s+256 MB/);
    const link = await row.getByRole('link', { name: 'workflow' }).getAttribute('href');
    expect(link).toBe(`${TEMPORAL_UI}/namespaces/${p.t.config.temporalNamespace}/workflows/${encodeURIComponent(`sandbox/${p.tenant.workspace}/${name}`)}`);
    await page.close();
  }, 60_000);

  it('runs a command typed in its terminal and shows its output, and shows a file it wrote', async () => {
    const page = await newPage();
    await signInWithKey(page, `${origin}/console/sandboxes/${name}`, p.tenant.admin.apiKey);
    await page.locator('[data-terminal-status="connected"]').waitFor();
    // Typed once the shell's prompt is drawn, so that the screenshot shows a plain command line.
    await page.locator('.xterm-rows', { hasText: '$' }).waitFor();
    await page.locator('.terminal-screen').click();
    await page.keyboard.type('echo console-$((6*7)) | tee /tmp/console-note.txt');
    await page.keyboard.press('Enter');
    // The echo of what was typed holds "$((6*7))"; only the shell's output holds 42.
    await page.locator('.xterm-rows', { hasText: 'console-42' }).waitFor({ timeout: 20_000 });
    await screenshot(page, 'console-sandbox-terminal');

    await page.getByRole('button', { name: 'tmp/' }).click();
    await page.getByRole('button', { name: 'console-note.txt' }).click();
    await expect(page.locator('.file-content').textContent()).resolves.toBe('console-42\n');
    await page.close();
  }, 60_000);

  it("does not open another workspace's sandbox terminal", async () => {
    const page = await newPage();
    await signInWithKey(page, `${origin}/console/resources/sandboxes`, p.tenant.admin.apiKey);
    // The relay carries the caller's credential: the sandbox gateway refuses a workspace it is not a member of.
    const refused = await page.evaluate(async (address) => {
      const socket = new (globalThis as any).WebSocket(address.url);
      return new Promise<string>((resolve) => {
        socket.onopen = () => socket.send(JSON.stringify({ type: 'auth', token: address.key }));
        socket.onmessage = (event: any) => resolve(String(event.data));
        socket.onclose = (event: any) => resolve(`closed ${event.code}`);
      });
    }, { url: `${origin.replace('http', 'ws')}/console/sandbox-terminal?workspace=${unique('elsewhere')}&sandbox=${name}`, key: p.tenant.admin.apiKey });
    expect(refused).toMatch(/"type":"error".*answered 403/);
    await page.close();
  }, 60_000);
});

describe('workspace admin', () => {
  it('creates an API key and shows it once', async () => {
    const page = await newPage();
    await signInWithKey(page, `${origin}/console/admin`, p.tenant.admin.apiKey);
    const account = page.locator(`article[data-client-id="${p.tenant.admin.clientId}"]`);
    await account.getByLabel('Key name').fill('from-the-console');
    await account.getByRole('button', { name: 'Create API key' }).click();
    const shown = account.getByRole('dialog', { name: 'New API key' });
    const key = ((await shown.locator('[data-secret]').textContent()) ?? '').trim();
    expect(key.length).toBeGreaterThan(20);
    // The key works: it is the one the API made.
    const check = await fetch(`${origin}/v0/workspaces`, { headers: { authorization: `Bearer ${key}` } });
    expect(check.status).toBe(200);
    await account.locator('tr[data-key-name="from-the-console"]').waitFor();
    await shown.getByRole('button', { name: 'I have saved it' }).click();
    await expect(shown.count()).resolves.toBe(0);
    expect(await page.content()).not.toContain(key);
    // Listed by its prefix only from now on, also after the page reads the list again.
    await page.getByRole('link', { name: 'Billing' }).click();
    await page.getByRole('link', { name: 'Workspace admin' }).click();
    await account.locator('tr[data-key-name="from-the-console"]').waitFor();
    expect(await page.content()).not.toContain(key);
    await page.close();
  }, 60_000);
});

describe('service accounts', () => {
  it('creates one, shows its client secret once, and that secret signs in', async () => {
    const page = await newPage();
    await signInWithKey(page, `${origin}/console/admin`, p.tenant.admin.apiKey);
    const name = unique('console-sa');
    const form = page.getByRole('form', { name: 'New service account' });
    await form.getByLabel('Name').fill(name);
    await form.getByLabel('Role').selectOption('member');
    await form.getByRole('button', { name: 'Create service account' }).click();
    const shown = form.getByRole('dialog');
    const secret = ((await shown.locator('[data-secret]').textContent()) ?? '').trim();
    const clientId = ((await shown.getAttribute('aria-label')) ?? '').replace('Client secret of ', '');
    await page.getByRole('article', { name: `Service account ${name}` }).waitFor();
    await shown.getByRole('button', { name: 'I have saved it' }).click();
    expect(await page.content()).not.toContain(secret);

    const other = await newPage();
    await other.goto(`${origin}/console/resources/sandboxes`);
    await other.getByLabel('service-account credentials').check();
    await other.getByLabel('Client id').fill(clientId);
    await other.getByLabel('Client secret').fill(secret);
    await other.getByRole('button', { name: 'Sign in' }).click();
    await other.getByRole('heading', { name: 'Resources' }).waitFor();
    await expect(other.getByRole('combobox', { name: 'Workspace' }).inputValue()).resolves.toBe(p.tenant.workspace);
    await other.close();
    await page.close();
  }, 60_000);
});

describe('other resources', () => {
  it('lists volumes with their workflow link, and connections without any of their secret values', async () => {
    const volume = unique('console-vol');
    const connection = unique('console-conn');
    const secret = { API_KEY: 'sk-console-secret-value-9876' };
    const call = (url: string, payload: Record<string, unknown>) => p.t.call(p.tenant.admin.apiKey, { method: 'POST', url, workspace: p.tenant.workspace, payload });
    expect((await call('/v0/volumes', { metadata: { name: volume }, spec: { size: 64 } })).statusCode).toBe(200);
    expect((await call('/v0/integrations/connections', { metadata: { name: connection, displayName: 'k' }, spec: { integration: 'openai', secret } })).statusCode).toBe(200);

    const page = await newPage();
    await signInWithKey(page, `${origin}/console/resources/volumes`, p.tenant.admin.apiKey);
    const row = page.locator(`tr[data-name="${volume}"]`);
    await expect(row.innerText()).resolves.toContain('64 MB');
    expect(await row.getByRole('link', { name: 'workflow' }).getAttribute('href')).toBe(`${TEMPORAL_UI}/namespaces/${p.t.config.temporalNamespace}/workflows/${encodeURIComponent(`volume/${p.tenant.workspace}/${volume}`)}`);

    await page.getByRole('link', { name: 'Integration connections' }).click();
    await expect(page.locator(`tr[data-name="${connection}"]`).innerText()).resolves.toContain('openai');
    // Not the value, and not the masked tail the API answers either.
    const html = await page.content();
    expect(html).not.toContain(secret.API_KEY);
    expect(html).not.toContain(secret.API_KEY.slice(-4));
    expect(html).not.toContain('API_KEY');
    await page.close();
  }, 60_000);
});

describe('jobs', () => {
  it("shows a job's executions with their tasks' progress and workflow", async () => {
    const job = unique('console-job');
    const api = (method: 'GET' | 'POST', url: string, payload?: Record<string, unknown>) => p.t.call(p.tenant.admin.apiKey, { method, url, payload, workspace: p.tenant.workspace });
    expect((await api('POST', '/v0/jobs', { metadata: { name: job }, spec: { runtime: { command: ['node', 'task.js'], memory: 256 } } })).statusCode).toBe(200);
    const row = await p.t.app.pg.query<{ id: string }>(`SELECT id FROM resources WHERE workspace_id = $1 AND kind = 'jobs' AND name = $2`, [p.tenant.workspaceId, job]);
    await deployJobCode(p.t.app.pg, p.t.config.dataDir, row.rows[0].id, { 'task.js': 'process.exit(process.env.TASK_INDEX === "2" ? 1 : 0)\n' });
    expect((await api('POST', `/${p.tenant.workspace}/jobs/${job}/executions`, { tasks: [{}, {}, {}], id: 'run-1' })).statusCode).toBe(200);
    const done = await eventually('run-1 to end', async () => {
      const body = (await api('GET', `/${p.tenant.workspace}/jobs/${job}/executions/run-1`)).json();
      return ['succeeded', 'failed'].includes(body.status) ? body : undefined;
    }, 90_000);

    const page = await newPage();
    await signInWithKey(page, `${origin}/console/resources/jobs`, p.tenant.admin.apiKey);
    const jobRow = page.locator(`tr[data-name="${job}"]`);
    await jobRow.getByText('executions').click();
    const execution = jobRow.locator('.executions li', { hasText: 'run-1' });
    const { total, success, failure } = done.stats;
    await expect(execution.innerText()).resolves.toContain(`run-1 ${done.status}`);
    await expect(execution.innerText()).resolves.toContain(`${success + failure}/${total} tasks (${failure} failed, 0 running)`);
    expect(await execution.getByRole('progressbar').getAttribute('value')).toBe(String(success + failure));
    expect(await execution.getByRole('link', { name: 'workflow' }).getAttribute('href')).toBe(
      `${TEMPORAL_UI}/namespaces/${p.t.config.temporalNamespace}/workflows/${encodeURIComponent(`job/${p.tenant.workspace}/${job}/run-1`)}`,
    );
    await page.close();
  }, 120_000);
});

describe('the terminal relay', () => {
  /** A client of the relay as the console is, from Node: its messages in order, until it closes. */
  function relayClient(sandbox: string, first: string[]) {
    const socket = new WebSocket(`${origin.replace('http', 'ws')}/console/sandbox-terminal?workspace=${p.tenant.workspace}&sandbox=${sandbox}`);
    const messages: string[] = [];
    const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)));
    socket.on('message', (data) => messages.push(data.toString()));
    // Everything at once on open: the input reaches the relay before its side to the sandbox is open.
    socket.on('open', () => first.forEach((m) => socket.send(m)));
    return { socket, messages, closed };
  }

  it('keeps keys typed before the sandbox side opened, in order', async () => {
    const name = (await p.t.call(p.tenant.admin.apiKey, { method: 'GET', url: '/v0/sandboxes', workspace: p.tenant.workspace })).json()[0].metadata.name as string;
    const input = (data: string) => JSON.stringify({ type: 'input', data });
    const client = relayClient(name, [JSON.stringify({ type: 'auth', token: p.tenant.admin.apiKey }), input('echo early-'), input('$((40+2)); exit\r')]);
    expect(await client.closed).toBe(1000);
    const output = client.messages.map((m) => JSON.parse(m) as { type: string; data: string }).filter((m) => m.type === 'output').map((m) => m.data).join('');
    expect(output).toContain('early-42');
  }, 30_000);

  it('refuses a first message without a credential, and a bad credential, with the reason', async () => {
    const name = 'any-box';
    const missing = relayClient(name, [JSON.stringify({ type: 'input', data: 'ls\r' })]);
    expect(await missing.closed).toBe(1008);
    expect(missing.messages.join('')).toContain('the first message must be {\\"type\\":\\"auth\\"');
    const bad = relayClient(name, [JSON.stringify({ type: 'auth', token: 'hk_not-a-real-key' })]);
    expect(await bad.closed).toBe(1008);
    expect(bad.messages.join('')).toMatch(/answered 401/);
    expect(bad.messages.join('')).not.toContain('hk_not-a-real-key');
  }, 30_000);
});
