import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { flushUsageOutbox } from '../../../activities/usage-flush';
import { recordUsage } from '../../../activities/usage-metering';
import { buildSandboxGatewayApp } from '../../../api/gateway/sandbox-app';
import { main as billingCheck } from '../../../cli/billing-check';
import { loadReconciliationInputs } from '../../../cli/billing-sources';
import { deployFolder, type DeployTarget } from '../../../cli/deploy';
import type { BillingDimension } from '../../../domain/billing/dimensions';
import { DEFAULT_RECONCILE_OPTIONS, reconcile, type Comparison } from '../../../domain/billing/reconciliation';
import { usageTables } from '../../../domain/billing/storage';
import { TERMINAL_EXECUTION_STATUSES } from '../../../domain/jobs/execution';
import { deploymentWorkflowId } from '../../../domain/workloads/workload';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { deployTarget, startWorkloadPlatform, stopRuntimeTest, type WorkloadPlatform } from '../../helpers/runtime-platform';
import { eventually } from '../../helpers/workers';

// Every kind runs for a few seconds through the real services (API, workflows, node runtime,
// outbox, ClickHouse); its bills are then compared with its state history. Short idle periods
// make sandboxes freeze and agents scale to zero within the run; no metering interval is
// shortened: every kind meters at each change of state and at deletion anyway.
jest.setTimeout(240_000);

let t: TestApp;
let tenant: TestTenant;
let platform: WorkloadPlatform;
let sandboxGateway: FastifyInstance;
let target: DeployTarget;
let resources: ReturnType<typeof tenantResources>;
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-reconcile-'));
const startedAt = Date.now();

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('reconcile'), sandboxIdleSeconds: 2, workloadIdleSeconds: 2, workloadWakeTimeoutSeconds: 60 });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  tenant = await createTenant(t.app.pg, 'reconcile');
  resources = tenantResources(t, tenant);
  platform = await startWorkloadPlatform(t);
  sandboxGateway = await buildSandboxGatewayApp(t.config, platform.runtime);
  target = deployTarget(t, tenant);
}, 90_000);

afterAll(async () => {
  await sandboxGateway?.close();
  await stopRuntimeTest({ ...platform, t, scratch });
}, 60_000);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const api = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) => resources.api(method, url, payload);

function stateOf(kind: string, name: string, wanted: string) {
  return eventually(`${kind} ${name} ${wanted}`, async () => ((await api('GET', `/v0/${kind}/${name}`)).json().state === wanted ? true : undefined), 60_000);
}

/** A workload folder deployed through the API and its deployment workflow. */
async function deploy(kind: 'agents' | 'functions' | 'jobs', name: string, spec: { runtime: Record<string, unknown>; type?: string }, files: Record<string, string>) {
  // Random bytes do not compress: a bundle of some size, so its image storage is well above the quantities' rounding (1e-6).
  files = { ...files, 'data.bin': randomBytes(2 * 1024 * 1024).toString('base64') };
  const dir = fs.mkdtempSync(path.join(scratch, `${name}-`));
  fs.writeFileSync(path.join(dir, 'hangar.json'), JSON.stringify({ kind, name, spec: { ...spec, runtime: { memory: 256, ...spec.runtime } } }));
  for (const [file, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, file), text);
  expect((await deployFolder(dir, target)).status).toBe('DEPLOYED');
}

/** Deleted, and its workflow has recorded its last period. */
async function deleteWorkload(kind: 'agents' | 'functions' | 'jobs', name: string) {
  expect((await api('DELETE', `/v0/${kind}/${name}`)).statusCode).toBe(200);
  await t.app.temporal.workflow.getHandle(deploymentWorkflowId(tenant.workspace, kind, name)).result();
}

const SERVER = `require('http').createServer((req, res) => res.end('{"output":"ok"}')).listen(process.env.PORT, process.env.HOST);`;

/** RUNNING, STANDBY (frozen when idle), resumed by a request, RUNNING again, deleted. */
async function sandboxLife() {
  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'box' }, spec: { runtime: { memory: 512 } } })).statusCode).toBe(200);
  await resources.status('sandboxes', 'box', 'DEPLOYED');
  await stateOf('sandboxes', 'box', 'STANDBY');
  await sleep(2_000);
  const resumed = await resources.sandboxCall(sandboxGateway, 'box', 'POST', '/process', { command: 'true', waitForCompletion: true });
  expect(resumed.statusCode).toBe(200);
  await stateOf('sandboxes', 'box', 'RUNNING');
  expect((await api('DELETE', '/v0/sandboxes/box')).statusCode).toBe(200);
  await resources.gone('sandboxes', 'box');
}

/** RUNNING, scaled to zero when idle, woken by a request, deleted. */
async function agentLife() {
  await deploy('agents', 'agent', { runtime: { command: ['node', 'main.js'], minScale: 0 } }, { 'main.js': SERVER });
  await stateOf('agents', 'agent', 'SCALED_TO_ZERO');
  await sleep(2_000);
  const woken = await fetch(`${platform.runUrl}/${tenant.workspace}/agents/agent`, { method: 'POST', headers: { authorization: `Bearer ${tenant.admin.apiKey}` }, body: '{}' });
  expect(woken.status).toBe(200);
  await sleep(1_000);
  await deleteWorkload('agents', 'agent');
}

async function mcpServerLife() {
  await deploy('functions', 'mcp', { type: 'mcp', runtime: { type: 'mcp', command: ['node', 'main.js'] } }, { 'main.js': SERVER });
  await sleep(4_000);
  await deleteWorkload('functions', 'mcp');
}

/** Deployed code (image storage) and one execution of two tasks (compute). */
async function jobLife() {
  await deploy('jobs', 'job', { runtime: { command: ['node', 'task.js'] } }, { 'task.js': 'setTimeout(() => process.exit(0), 1500);' });
  const execution = await t.call(tenant.admin.apiKey, { method: 'POST', url: `/${tenant.workspace}/jobs/job/executions`, payload: { tasks: [{}, {}] }, workspace: tenant.workspace });
  expect(execution.statusCode).toBeLessThan(300);
  const id = execution.json().id;
  await eventually('execution ended', async () => {
    const body = (await t.call(tenant.admin.apiKey, { method: 'GET', url: `/${tenant.workspace}/jobs/job/executions/${id}`, workspace: tenant.workspace })).json();
    return TERMINAL_EXECUTION_STATUSES.includes(body.status) ? body : undefined;
  }, 60_000);
  await deleteWorkload('jobs', 'job');
}

async function volumeLife() {
  expect((await api('POST', '/v0/volumes', { metadata: { name: 'vol' }, spec: { size: 64 } })).statusCode).toBe(200);
  await resources.status('volumes', 'vol', 'DEPLOYED');
  await sleep(4_000);
  expect((await api('DELETE', '/v0/volumes/vol')).statusCode).toBe(200);
  await resources.gone('volumes', 'vol');
}

async function customDomainLife() {
  const created = await api('POST', '/v0/customdomains', { metadata: { name: 'www' }, spec: { domain: `${unique('chat')}.example.com`, target: { kind: 'agent', name: 'agent' } } });
  expect(created.statusCode).toBe(200);
  await resources.status('customdomains', 'www', 'DEPLOYED');
  await sleep(4_000);
  expect((await api('DELETE', '/v0/customdomains/www')).statusCode).toBe(200);
  await resources.gone('customdomains', 'www');
}

async function flush() {
  await flushUsageOutbox(t.app.pg, t.app.clickhouse, usageTables(t.config.clickhouseDatabase), { gatherMs: 0 });
}

/** billing:check as an operator runs it, for this tenant's account; answers its exit status and output. */
async function runCheck(...options: string[]) {
  let output = '';
  const env = { ...process.env, DATABASE_URL: t.config.databaseUrl, CLICKHOUSE_URL: t.config.clickhouseUrl, CLICKHOUSE_DATABASE: t.config.clickhouseDatabase };
  const status = await billingCheck(['--since', '1h', '--account', tenant.accountId, ...options], env, (text) => (output += text));
  return { status, output };
}

const EXPECTED: [string, BillingDimension][] = [
  ['box', 'sandbox_compute_runtime_gbs'],
  ['agent', 'agent_compute_runtime_gbs'],
  ['agent', 'agent_image_storage_gbs'],
  ['mcp', 'mcp_server_compute_runtime_gbs'],
  ['mcp', 'mcp_server_image_storage_gbs'],
  ['job', 'job_image_storage_gbs'],
  ['job', 'job_compute_runtime_gbs'],
  ['vol', 'volume_storage_gbs'],
  ['www', 'custom_domain_active_time_hours'],
];

test('every kind, run for a known time, is billed what its state history says (within 1%)', async () => {
  await Promise.all([sandboxLife(), agentLife(), mcpServerLife(), jobLife(), volumeLife(), sleep(3_000).then(customDomainLife)]);
  await flush();

  // The history holds the states each went through, as their workflows decided them.
  const { rows } = await t.app.pg.query<{ resource_name: string; state: string }>(
    'SELECT resource_name, state FROM resource_state_intervals WHERE workspace_id = $1 ORDER BY resource_name, started_at',
    [tenant.workspaceId],
  );
  const states = (name: string) => rows.filter((row) => row.resource_name === name).map((row) => row.state);
  expect(states('box')).toEqual(['RUNNING', 'STANDBY', 'RUNNING']);
  expect(states('agent')).toEqual(['RUNNING', 'STOPPED', 'RUNNING']);
  expect(states('vol')).toEqual(['DEPLOYED']);
  expect(states('www')).toEqual(['ACTIVE']);

  // Strictly: every life is over and flushed, so nothing is left unjudged, and 1% is the only slack.
  const window = { since: startedAt - 60_000, until: Date.now(), accountId: tenant.accountId };
  const inputs = await loadReconciliationInputs(t.app.pg, t.app.clickhouse, usageTables(t.config.clickhouseDatabase), window);
  const report = reconcile(inputs, inputs.billed, { ...DEFAULT_RECONCILE_OPTIONS, ...window, settleMs: 0, relativeTolerance: 0.01, toleranceSeconds: 0 });
  expect(report.disagreements).toEqual([]);
  for (const [name, dimension] of EXPECTED) {
    const compared = report.comparisons.filter((c: Comparison) => c.resourceName === name && c.billingDimension === dimension);
    expect(compared).toHaveLength(1);
    expect(compared[0].expected).toBeGreaterThan(0);
    expect(Math.abs(compared[0].billed - compared[0].expected)).toBeLessThanOrEqual(0.01 * compared[0].expected);
  }

  // The operator's command agrees: no false alarm.
  const clean = await runCheck('--output', 'json', '--settle', '0s');
  expect(JSON.parse(clean.output)).toEqual(expect.objectContaining({ checked: report.comparisons.length, disagreements: [] }));
  expect(clean.status).toBe(0);
});

test('billing:check lists a resource whose bill was corrupted, and only that one', async () => {
  const { rows } = await t.app.pg.query<{ resource_uuid: string; started_at: Date }>(
    `SELECT resource_uuid, started_at FROM resource_state_intervals WHERE workspace_id = $1 AND resource_name = 'vol'`,
    [tenant.workspaceId],
  );
  // One usage event too many for the volume: a whole extra gigabyte-hour, in the middle of its life.
  await recordUsage(t.app.pg, {
    accountId: tenant.accountId,
    workspace: tenant.workspace,
    resourceType: 'volume',
    resourceName: 'vol',
    resourceUuid: rows[0].resource_uuid,
    billingDimension: 'volume_storage_gbs',
    quantity: 3600,
    periodStart: new Date(rows[0].started_at.getTime() + 1_000),
  });
  await flush();

  const json = await runCheck('--output', 'json', '--settle', '0s');
  expect(json.status).toBe(1);
  expect(JSON.parse(json.output).disagreements).toEqual([
    expect.objectContaining({ resourceName: 'vol', billingDimension: 'volume_storage_gbs', reason: 'billed more than the state history says' }),
  ]);
  const table = await runCheck('--settle', '0s');
  expect(table.status).toBe(1);
  expect(table.output).toMatch(/vol\s.*volume_storage_gbs.*billed more than the state history says/);
  expect(table.output).toContain('1 disagree');

  expect((await runCheck('--since', 'yesterday')).output).toContain("--since must be a duration such as 90m, 24h or 7d, got 'yesterday'");
});
