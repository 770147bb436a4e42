import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { flushUsageOutbox } from '../../../activities/usage-flush';
import { usageTables } from '../../../domain/billing/storage';
import { repoRoot } from '../../../scripts/stack/binaries';
import { runCliScript, runHangar } from '../../helpers/hangar-cli';
import { unique } from '../../helpers/platform';
import { startReferenceSdkPlatform, type ReferenceSdkPlatform } from '../../helpers/reference-sdk';

/**
 * The built `hangar` binary (dist/cli/hangar.js, built by npm test / npm run build) run as a
 * child process against the platform listening on a port: the API, and the sandbox gateway for exec.
 */

let p: ReferenceSdkPlatform;
let apiUrl: string;
let home: string;

const hangar = (args: string[], env: Record<string, string> = {}, stdin = '') => runHangar(home, args, env, stdin);

const credentialsPath = () => path.join(home, 'config', 'credentials.json');

beforeAll(async () => {
  if (!fs.existsSync(path.join(repoRoot(), 'dist/cli/hangar.js'))) throw new Error('dist/cli/hangar.js is missing: run npm run build first');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-cli-'));
  p = await startReferenceSdkPlatform('cli');
  apiUrl = `http://127.0.0.1:${(p.t.app.server.address() as { port: number }).port}`;
}, 120_000);

afterAll(async () => {
  await p?.stop();
  fs.rmSync(home, { recursive: true, force: true });
});

describe('hangar login', () => {
  it('refuses a bad key with exit 1 and stores nothing', async () => {
    const run = await hangar(['login', '--url', apiUrl, '--api-key', 'hk_not-a-real-key', '--workspace', p.tenant.workspace]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/login refused.*check the API key/);
    expect(run.stdout + run.stderr).not.toContain('hk_not-a-real-key');
    expect(fs.existsSync(credentialsPath())).toBe(false);
  });

  it('refuses a workspace the key does not belong to', async () => {
    const run = await hangar(['login', '--url', apiUrl, '--api-key', p.tenant.admin.apiKey, '--workspace', unique('elsewhere')]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/workspace 'elsewhere-[0-9a-f]+' is not one of this key's/);
    expect(run.stdout + run.stderr).not.toContain(p.tenant.admin.apiKey);
  });

  it('without login, a command says how to log in (exit 1)', async () => {
    const run = await hangar(['list', 'agents']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('not logged in: run hangar login --url');
  });

  it('checks the key, stores it 0600 and never prints it (flags, then the environment)', async () => {
    const run = await hangar(['login', '--url', apiUrl, '--api-key', p.tenant.admin.apiKey, '--workspace', p.tenant.workspace]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`logged in to ${apiUrl} (workspace ${p.tenant.workspace})`);
    expect(run.stdout + run.stderr).not.toContain(p.tenant.admin.apiKey);
    expect(fs.statSync(credentialsPath()).mode & 0o777).toBe(0o600);
    expect(JSON.parse(fs.readFileSync(credentialsPath(), 'utf8'))).toEqual({ url: apiUrl, apiKey: p.tenant.admin.apiKey, workspace: p.tenant.workspace });

    // A file left readable by others (an older copy) is made 0600 again by the next login.
    fs.chmodSync(credentialsPath(), 0o644);
    const fromEnv = await hangar(['login'], { HANGAR_URL: apiUrl, HANGAR_API_KEY: p.tenant.admin.apiKey, HANGAR_WORKSPACE: p.tenant.workspace });
    expect(fromEnv.code).toBe(0);
    expect(fs.statSync(credentialsPath()).mode & 0o777).toBe(0o600);

    const fromStdin = await hangar(['login', '--url', apiUrl, '--api-key', '-', '--workspace', p.tenant.workspace], {}, `${p.tenant.admin.apiKey}\n`);
    expect(fromStdin.code).toBe(0);
    expect(fromStdin.stdout + fromStdin.stderr).not.toContain(p.tenant.admin.apiKey);
    expect(JSON.parse(fs.readFileSync(credentialsPath(), 'utf8'))).toMatchObject({ apiKey: p.tenant.admin.apiKey });
  });
});

describe('hangar apply, get, list, delete', () => {
  const agent = unique('cli-agent');
  const volume = unique('cli-vol');

  it('applies two resources from one YAML file, then updates them on a second apply', async () => {
    const file = path.join(home, 'two.yaml');
    const manifest = (memory: number) =>
      `kind: Agent\nmetadata:\n  name: ${agent}\nspec:\n  runtime:\n    memory: ${memory}\n---\nkind: Volume\nmetadata:\n  name: ${volume}\nspec:\n  size: 64\n`;
    fs.writeFileSync(file, manifest(256));
    const first = await hangar(['apply', '-f', file]);
    expect(first).toMatchObject({ code: 0, stderr: '' });
    expect(first.stdout).toBe(`agents/${agent} created\nvolumes/${volume} created\n`);

    fs.writeFileSync(file, manifest(512).split('---')[0]);
    const second = await hangar(['apply', '-f', file, '--output', 'json']);
    expect(second.code).toBe(0);
    const [updated] = JSON.parse(second.stdout) as { metadata: { name: string }; spec: { runtime: { memory: number } } }[];
    expect(updated.metadata.name).toBe(agent);
    expect(updated.spec.runtime.memory).toBe(512);
  });

  it('gets and lists them as tables and as JSON', async () => {
    const table = await hangar(['list', 'agents']);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+STATUS\s+DETAIL\s+UPDATED$/);
    expect(lines.find((line) => line.startsWith(agent))).toBeDefined();

    const json = await hangar(['list', 'volumes', '-o', 'json']);
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as { metadata: { name: string } }[]).map((v) => v.metadata.name)).toContain(volume);

    const one = await hangar(['get', 'agent', agent, '--output=json']);
    expect(one.code).toBe(0);
    expect(JSON.parse(one.stdout)).toMatchObject({ metadata: { name: agent, workspace: p.tenant.workspace } });
    const oneTable = await hangar(['get', 'volumes', volume]);
    expect(oneTable.stdout.split('\n')[2]).toMatch(new RegExp(`^${volume}\\s`));
  });

  it('deletes one, and an unknown name is exit 1 with the API message', async () => {
    const deleted = await hangar(['delete', 'agents', agent]);
    expect(deleted).toMatchObject({ code: 0, stdout: `deleted agents/${agent}\n` });
    const missing = await hangar(['get', 'agents', 'no-such-agent']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/404 .*no-such-agent/);
  });

  it('refuses a bad manifest before sending anything (exit 2, naming the field)', async () => {
    const file = path.join(home, 'bad.yaml');
    fs.writeFileSync(file, `kind: Agent\nmetadata:\n  name: ok-${agent}\n---\nkind: Agent\nspec: {}\n`);
    const run = await hangar(['apply', '-f', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('document 2: metadata is required');
    expect((await hangar(['get', 'agents', `ok-${agent}`])).code).toBe(1);
  });

  it('passes the API refusal of a spec through as exit 1', async () => {
    const file = path.join(home, 'wrong-type.yaml');
    fs.writeFileSync(file, `kind: Agent\nmetadata:\n  name: typed-${agent}\nspec:\n  runtime:\n    memory: "1024"\n`);
    const run = await hangar(['apply', '-f', file]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/400 .*memory/);
  });
});

describe('hangar deploy', () => {
  it('deploys a folder with the stored credentials, progress as plain lines on stderr, exit 0 once DEPLOYED', async () => {
    const name = unique('cli-echo');
    const run = await hangar(['deploy', path.join(repoRoot(), 'examples', 'agent'), '--name', name]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^DEPLOYED: http\S+\n$/);
    expect(run.stderr).toContain(`deploy: created agents/${name}\n`);
    // The bytes sent so far are for a bar: without a terminal, only the end of the upload is told.
    expect(run.stderr).not.toMatch(/^upload: [0-9.]+ KiB of /m);
    expect(run.stderr).toMatch(/^upload: [0-9.]+ KiB sent as revision 1$/m);
    expect(run.stderr).toMatch(/^deploy: DEPLOYED: revision 1/m);
    // Not a terminal: no bar, no carriage returns or escape sequences.
    expect(run.stderr.includes('\r') || run.stderr.includes('\u001b')).toBe(false);
    expect((await hangar(['delete', 'agents', name])).code).toBe(0);
  }, 120_000);
});

describe('node dist/cli/deploy.js', () => {
  it("is hangar deploy with the local stack's key (HANGAR_DATA_DIR/credentials.json), no login needed", async () => {
    const name = unique('cli-script');
    const dataDir = fs.mkdtempSync(path.join(home, 'data-'));
    fs.writeFileSync(path.join(dataDir, 'credentials.json'), JSON.stringify({ apiKey: p.tenant.admin.apiKey }));
    const run = await runCliScript(path.join(repoRoot(), 'dist/cli/deploy.js'), path.join(home, 'nobody'), [path.join(repoRoot(), 'examples', 'agent'), '--name', name], {
      HANGAR_URL: apiUrl,
      HANGAR_WORKSPACE: p.tenant.workspace,
      HANGAR_DATA_DIR: dataDir,
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^DEPLOYED: http/);
    expect(run.stdout + run.stderr).not.toContain(p.tenant.admin.apiKey);
    expect((await hangar(['delete', 'agents', name])).code).toBe(0);
  }, 120_000);
});

describe('hangar and integration connections', () => {
  it('applies a connection from YAML and never shows its secrets (apply, list, get)', async () => {
    const name = unique('cli-mail');
    const secret = { CLIENT_ID: `client-${unique('id')}`, CLIENT_SECRET: `secret-${unique('s')}-XYZW`, REFRESH_TOKEN: `refresh-${unique('r')}-tail` };
    const file = path.join(home, 'connection.yaml');
    fs.writeFileSync(file, `kind: IntegrationConnection\nmetadata:\n  name: ${name}\n  displayName: Mail\nspec:\n  integration: email\n  secret:\n${Object.entries(secret).map(([k, v]) => `    ${k}: ${v}`).join('\n')}\n`);
    const runs = [
      await hangar(['apply', '-f', file, '-o', 'json']),
      await hangar(['list', 'connections']),
      await hangar(['list', 'connections', '-o', 'json']),
      await hangar(['get', 'connection', name, '-o', 'json']),
    ];
    expect(runs.map((run) => run.code)).toEqual([0, 0, 0, 0]);
    expect(runs[1].stdout).toMatch(new RegExp(`^${name}\\s+email\\s`, 'm'));
    expect(JSON.parse(runs[3].stdout)).toMatchObject({ metadata: { name }, spec: { integration: 'email', secret: { CLIENT_SECRET: '********XYZW' } } });
    for (const run of runs) for (const value of Object.values(secret)) expect(run.stdout + run.stderr).not.toContain(value);
  });
});

describe('hangar sandbox exec and logs', () => {
  it("prints the command's output, exits with its exit code, and shows a process's logs", async () => {
    const name = unique('cli-box');
    const created = await p.t.call(p.tenant.admin.apiKey, { method: 'POST', url: '/v0/sandboxes', workspace: p.tenant.workspace, payload: { metadata: { name }, spec: {} } });
    expect(created.statusCode).toBe(200);
    const ok = await hangar(['sandbox', 'exec', name, '--', 'echo', 'hello world']);
    expect(ok).toMatchObject({ code: 0, stdout: 'hello world\n' });
    const failing = await hangar(['sandbox', 'exec', name, '--', 'sh', '-c', 'echo oops >&2; exit 7']);
    expect(failing).toMatchObject({ code: 7, stderr: 'oops\n' });

    // A named process started through the sandbox's API, its output read back by hangar logs.
    const url = (JSON.parse((await hangar(['get', 'sandboxes', name, '-o', 'json'])).stdout) as { metadata: { url: string } }).metadata.url;
    const started = await fetch(`${url}/process`, {
      method: 'POST',
      headers: { authorization: `Bearer ${p.tenant.admin.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'greeter', command: 'echo one; echo two', waitForCompletion: true }),
    });
    expect(started.status).toBe(200);
    expect(await hangar(['logs', 'sandboxes', name, 'greeter'])).toMatchObject({ code: 0, stdout: 'one\ntwo\n' });
    const unknown = await hangar(['logs', 'sandbox', name, 'no-such-process']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/404/);
  }, 120_000);
});

describe('hangar billing', () => {
  it('shows the usage as JSON and CSV', async () => {
    const now = Date.now();
    const events = [1, 2].map((n) => ({
      id: unique('cli-usage'),
      timestamp: new Date(now - n * 3_600_000).toISOString(),
      workspace: p.tenant.workspace,
      resourceType: 'sandbox',
      resourceName: 'billed-box',
      resourceUuid: 'uuid-billed-box',
      billingDimension: 'sandbox_compute_runtime_gbs',
      quantity: 1000,
    }));
    const ingested = await p.t.call(p.tenant.admin.apiKey, { method: 'POST', url: `/v0/accounts/${p.tenant.accountId}/usage-events`, payload: { events } });
    expect(ingested.statusCode).toBe(202);
    await flushUsageOutbox(p.t.app.pg, p.t.app.clickhouse, usageTables(p.t.config.clickhouseDatabase), { gatherMs: 0 });

    const json = await hangar(['billing', '--since', '1d', '--output', 'json']);
    expect(json.code).toBe(0);
    const body = JSON.parse(json.stdout) as { totalCost: number; data: { resourceName?: string; summary: { usage?: Record<string, number> } }[] };
    expect(body.totalCost).toBeGreaterThan(0);
    // Other tests of the file meter too (a deployed agent): only this resource's entry is checked.
    expect(body.data.filter((entry) => entry.resourceName === 'billed-box')).toEqual([expect.objectContaining({ resourceName: 'billed-box', billingDimension: 'sandbox_compute_runtime_gbs', summary: expect.objectContaining({ usage: { gbs: 2000 } }) })]);

    const csv = await hangar(['billing', '--since', '1d', '--group-by', 'resource_name,billing_dimension', '--output', 'csv']);
    expect(csv.code).toBe(0);
    const [header, ...lines] = csv.stdout.trimEnd().split('\n');
    expect(header).toBe('workspace,resource_type,resource_name,billing_dimension,usage,cost_usd');
    expect(lines.filter((line) => line.includes(',billed-box,'))).toEqual([
      expect.stringMatching(new RegExp(`^${p.tenant.workspace},sandbox,billed-box,sandbox_compute_runtime_gbs,2000 gbs,[0-9]+\\.[0-9]{9}$`)),
    ]);
  });
});

describe('usage errors exit 2', () => {
  it.each([
    [[], /usage: hangar <command>/],
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['list', 'widgets'], /unknown kind 'widgets': one of sandboxes, agents/],
    [['list', 'agents', '--output', 'yaml'], /--output must be one of table, json/],
    [['list', 'agents', '--colour'], /unknown option '--colour'/],
    [['delete', 'nodes', 'n1'], /nodes can only be listed/],
    [['delete', 'agents'], /usage: hangar delete <kind> <name>/],
    [['apply'], /usage: hangar apply -f/],
    [['deploy', '/nonexistent'], /has no hangar.json: usage: hangar deploy/],
    [['deploy', '.', '--timeout', 'soon'], /--timeout must be a whole number of seconds/],
    [['node'], /usage: hangar node list \| drain <node id>/],
    [['node', 'drain'], /usage: hangar node list/],
    [['sandbox', 'cp', 'a', 'b'], /one side must be local and the other <sandbox>:\/path/],
    [['sandbox', 'cp', 'box:relative', '.'], /the sandbox path must be absolute/],
    [['sandbox', 'shell'], /usage: hangar sandbox shell <name>/],
    [['sandbox', 'frobnicate'], /usage: hangar sandbox exec\|shell\|cp/],
    [['apply', '-f', '/nonexistent/file.yaml'], /cannot read \/nonexistent\/file.yaml: ENOENT/],
    [['sandbox', 'exec', 'box'], /usage: hangar sandbox exec <name> -- <command/],
    [['logs', 'agents', 'echo'], /the API serves no logs for agents: usage: hangar logs sandboxes/],
    [['logs', 'sandboxes', 'box'], /usage: hangar logs sandboxes <name> <process>/],
    [['billing', '--since', 'yesterday'], /--since must be a duration such as 30m/],
    [['billing', '--group-by', 'colour'], /--group-by takes up to 3 of workspace/],
    [['login', '--url', 'ftp://x'], /--url must be an http\(s\) address/],
  ])('hangar %j', async (args, message) => {
    const run = await hangar(args as string[]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message as RegExp);
  });
});
