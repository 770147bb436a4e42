import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { deployFolder, type DeployTarget } from '../../../cli/deploy';
import { revisionSandboxId } from '../../../domain/workloads/workload';
import { refusalReporter } from '../../../runtime/network/refusal-events';
import type { SandboxNetwork } from '../../../runtime/network/sandbox-network';
import type { SandboxRecord } from '../../../runtime/state-store';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { deployTarget, startWorkloadPlatform, stopRuntimeTest, type WorkloadPlatform } from '../../helpers/runtime-platform';
import { startTestInternet, testSandboxNetwork, type TestInternet } from '../../helpers/test-internet';
import { eventually } from '../../helpers/workers';
import { deployJobCode } from '../jobs/helpers';
import { TERMINAL_EXECUTION_STATUSES } from '../../../domain/jobs/execution';

/**
 * Workloads' `spec.network`, end to end: an agent deployed with an allow list reaches an allowed
 * test host by name and is refused a forbidden one and a literal address; one without
 * `spec.network` has loopback only; each instance's namespace, interfaces and lease are gone
 * once it scales to zero, is replaced by a new revision (a PUT of the policy) or is deleted.
 * The node resolves only the test's own hosts (test-internet.ts): nothing leaves the machine.
 */
jest.setTimeout(180_000);

const IDLE_SECONDS = 2;

let t: TestApp;
let tenant: TestTenant;
let internet: TestInternet;
let network: SandboxNetwork;
let platform: WorkloadPlatform;
let target: DeployTarget;
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-wl-network-'));

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('wl-network'), sandboxNetwork: true, workloadIdleSeconds: IDLE_SECONDS, workloadWakeTimeoutSeconds: 60 });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  tenant = await createTenant(t.app.pg, 'wl-network');
  internet = await startTestInternet(2);
  const [first, second] = internet.hosts;
  network = testSandboxNetwork(path.join(t.config.dataDir, `network-wl-${process.pid}`), () => ({ 'first.test': [first], 'second.test': [second] }), {
    onRefused: refusalReporter(t.app.pg, () => undefined),
  });
  await network.start();
  // A warm sandbox waiting, as on a node: a networked start takes it over with its own policy.
  platform = await startWorkloadPlatform(t, { runtime: { network, warmPool: 1 } });
  target = deployTarget(t, tenant);
}, 120_000);

afterAll(async () => {
  await stopRuntimeTest({ ...platform, t, scratch });
  await network?.tearDown();
  await internet?.close();
}, 120_000);

const resources = () => tenantResources(t, tenant);

/** Answers its interfaces and, given a URL, what a plain http.get of it got (status and body, or the error's code). */
const FETCHER = `
const http = require('http');
const os = require('os');
http.createServer((req, res) => {
  let body = '';
  req.on('data', (chunk) => (body += chunk));
  req.on('end', () => {
    const { url } = JSON.parse(body || '{}');
    const interfaces = Object.keys(os.networkInterfaces()).sort();
    const reply = (answer) => res.end(JSON.stringify({ ...answer, interfaces }));
    if (!url) return reply({});
    const out = http.get(url, { timeout: 15000 }, (r) => {
      let data = '';
      r.on('data', (chunk) => (data += chunk));
      r.on('end', () => reply({ status: r.statusCode, body: data }));
    });
    out.on('timeout', () => out.destroy(new Error('timeout')));
    out.on('error', (err) => reply({ error: err.code || err.message }));
  });
}).listen(process.env.PORT, process.env.HOST);
`;

async function deploy(name: string, spec: Record<string, unknown>) {
  const dir = fs.mkdtempSync(path.join(scratch, `${name}-`));
  fs.writeFileSync(path.join(dir, 'hangar.json'), JSON.stringify({ kind: 'agents', name, spec: { runtime: { memory: 256 }, ...spec } }));
  fs.writeFileSync(path.join(dir, 'main.js'), FETCHER);
  expect((await deployFolder(dir, target)).status).toBe('DEPLOYED');
  return resources().idOf('agents', name);
}

async function ask(name: string, url?: string): Promise<{ status?: number; body?: string; error?: string; interfaces: string[] }> {
  const res = await fetch(`${platform.runUrl}/${tenant.workspace}/agents/${name}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${tenant.admin.apiKey}` },
    body: JSON.stringify(url ? { url } : {}),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as never;
}

/** The node's record of a runtime sandbox (a revision's instance). */
function nodeRecord(sandboxId: string): SandboxRecord {
  return JSON.parse(fs.readFileSync(platform.runtime.layout(sandboxId).stateFile, 'utf8')) as SandboxRecord;
}

/** The namespace of a running instance: its name under /run/netns and its host-side interface. */
function namespaceOf(sandboxId: string): { netns: string; hostInterface: string } {
  const attachment = nodeRecord(sandboxId).network;
  if (!attachment) throw new Error(`${sandboxId} has no network`);
  const netns = path.basename(attachment.netnsPath);
  return { netns, hostInterface: `${network.plan.interfacePrefix}${netns.slice('hangar-'.length)}` };
}

const leasesDir = () => path.join(network.options.dataDir, 'network', 'leases');
const leaseHolders = () => fs.readdirSync(leasesDir()).map((file) => (JSON.parse(fs.readFileSync(path.join(leasesDir(), file), 'utf8')) as { sandboxId: string }).sandboxId);

/** Nothing of the instance's network is left on the node: namespace, host interface, lease. */
function expectNoNetworkLeft(sandboxId: string, { netns, hostInterface }: { netns: string; hostInterface: string }): void {
  expect(execFileSync('ip', ['netns', 'list']).toString()).not.toContain(netns);
  expect(execFileSync('ip', ['-o', 'link']).toString()).not.toContain(hostInterface);
  expect(leaseHolders()).not.toContain(sandboxId);
}

const stateOf = (name: string, state: 'RUNNING' | 'SCALED_TO_ZERO') =>
  eventually(`${name} ${state}`, async () => ((await resources().api('GET', `/v0/agents/${name}`)).json().state === state ? true : undefined), 60_000);

test('an agent with an allow list reaches the allowed host by name; a forbidden name and literal addresses are refused', async () => {
  const [first, second] = internet.hosts;
  const id = await deploy('allowed', { network: { allowedDomains: ['first.test'] } });
  const allowed = await ask('allowed', 'http://first.test/');
  expect(allowed).toMatchObject({ status: 200, interfaces: ['eth0', 'lo'] });
  expect(JSON.parse(allowed.body!)).toMatchObject({ host: 'first.test', local: first });
  // The node's DNS answerer does not name a forbidden host...
  expect((await ask('allowed', 'http://second.test/')).error).toMatch(/^(ENOTFOUND|EAI_AGAIN)$/);
  // ...and an address, even the allowed host's, does not skip the allow list.
  for (const address of [second, first]) {
    const refused = await ask('allowed', `http://${address}/`);
    expect({ address, status: refused.status }).toEqual({ address, status: 403 });
    expect(refused.body).toContain(`refused ${address}: not in spec.network.allowedDomains`);
  }
  // Each refusal is an event of the agent, naming the destination, the rule and the revision.
  await eventually('the refusal events', async () => {
    const messages = ((await resources().api('GET', '/v0/agents/allowed')).json().events as { type: string; message: string }[])
      .filter((event) => event.type === 'Warning')
      .map((event) => event.message);
    const expected = [`egress refused: 'second.test': not in spec.network.allowedDomains (revision 1)`, `egress refused: '${second}': not in spec.network.allowedDomains (revision 1)`];
    return expected.every((message) => messages.includes(message)) ? true : undefined;
  });
  const namespace = namespaceOf(revisionSandboxId(id, 1));
  expect((await resources().api('DELETE', '/v0/agents/allowed')).statusCode).toBe(200);
  await resources().gone('agents', 'allowed', 90_000);
  await eventually('the instance removed', async () => ((await platform.runtime.status(revisionSandboxId(id, 1))) === undefined ? true : undefined), 60_000);
  expectNoNetworkLeft(revisionSandboxId(id, 1), namespace);
});

test('a workload without spec.network keeps loopback only: no namespace of the node, no route out', async () => {
  const id = await deploy('isolated', {});
  const answer = await ask('isolated', `http://${internet.hosts[0]}/`);
  expect(answer.interfaces).toEqual(['lo']);
  expect(answer.error).toMatch(/^(ENETUNREACH|EHOSTUNREACH|ECONNREFUSED)$/);
  expect(nodeRecord(revisionSandboxId(id, 1)).network).toBeUndefined();
  expect(leaseHolders()).not.toContain(revisionSandboxId(id, 1));
});

test("scaling to zero removes the instance's namespace, waking gives it one again; a PUT of the policy deploys a new revision and removes the old one's", async () => {
  const [first, second] = internet.hosts;
  const id = await deploy('sleepy', { runtime: { memory: 256, minScale: 0 }, network: { allowedDomains: ['first.test'] } });
  const instance = revisionSandboxId(id, 1);
  expect(JSON.parse((await ask('sleepy', 'http://first.test/')).body!).local).toBe(first);
  const asleep = namespaceOf(instance);
  await stateOf('sleepy', 'SCALED_TO_ZERO');
  await eventually('the instance removed', async () => ((await platform.runtime.status(instance)) === undefined ? true : undefined), 60_000);
  expectNoNetworkLeft(instance, asleep);

  // The next request wakes it, in a namespace of its own again, under the same policy.
  expect(JSON.parse((await ask('sleepy', 'http://first.test/')).body!).local).toBe(first);
  const awake = namespaceOf(instance);

  const current = (await resources().api('GET', '/v0/agents/sleepy')).json();
  const put = await resources().api('PUT', '/v0/agents/sleepy', { metadata: current.metadata, spec: { ...current.spec, network: { allowedDomains: ['second.test'] } } });
  expect(put.statusCode).toBe(200);
  await eventually('revision 2 serving', async () => {
    const answer = await ask('sleepy', 'http://second.test/');
    return answer.body && JSON.parse(answer.body).local === second ? true : undefined;
  }, 90_000);
  expect((await ask('sleepy', 'http://first.test/')).error).toMatch(/^(ENOTFOUND|EAI_AGAIN)$/);
  const revisions = (await resources().api('GET', '/v0/agents/sleepy/revisions')).json() as { revision: number; bundleSha256: string }[];
  expect(revisions.map((r) => r.revision)).toEqual([2, 1]);
  expect(revisions[0].bundleSha256).toBe(revisions[1].bundleSha256);
  await eventually('revision 1 removed', async () => ((await platform.runtime.status(instance)) === undefined ? true : undefined), 60_000);
  expectNoNetworkLeft(instance, awake);

  const replaced = namespaceOf(revisionSandboxId(id, 2));
  expect((await resources().api('DELETE', '/v0/agents/sleepy')).statusCode).toBe(200);
  await resources().gone('agents', 'sleepy', 90_000);
  await eventually('revision 2 removed', async () => ((await platform.runtime.status(revisionSandboxId(id, 2))) === undefined ? true : undefined), 60_000);
  expectNoNetworkLeft(revisionSandboxId(id, 2), replaced);
});

/** A task: fetches its URL after `sleepMs` and exits 0 when what happened is what it `expect`s ('reached' the host answering as `local`, or 'refused'). */
const TASK = `
const http = require('http');
const args = JSON.parse(process.env.TASK_ARGUMENTS);
const done = (outcome, detail) => {
  console.error(outcome + ': ' + detail);
  process.exit(outcome === args.expect ? 0 : 1);
};
setTimeout(() => {
  const req = http.get(args.url, { timeout: 15000 }, (res) => {
    let data = '';
    res.on('data', (chunk) => (data += chunk));
    res.on('end', () => done(res.statusCode === 200 && data.includes(args.local) ? 'reached' : 'refused', res.statusCode + ' ' + data));
  });
  req.on('timeout', () => req.destroy(new Error('timeout')));
  req.on('error', (err) => done(['ENOTFOUND', 'EAI_AGAIN'].includes(err.code) ? 'refused' : 'error', err.code || err.message));
}, args.sleepMs || 0);
`;

test("a job's tasks run in its execution's namespace under the job's policy, which is gone when the execution ends", async () => {
  const [first] = internet.hosts;
  const created = await resources().api('POST', '/v0/jobs', {
    metadata: { name: 'fetch-job' },
    spec: { runtime: { command: ['node', 'task.js'], memory: 256 }, network: { allowedDomains: ['first.test'] } },
  });
  expect(created.statusCode).toBe(200);
  await deployJobCode(t.app.pg, t.config.dataDir, await resources().idOf('jobs', 'fetch-job'), { 'task.js': TASK });
  const tasks = [
    { url: 'http://first.test/', local: first, expect: 'reached', sleepMs: 3000 },
    { url: 'http://second.test/', expect: 'refused' },
    { url: `http://${first}/`, expect: 'refused' },
  ];
  const executions = `/${tenant.workspace}/jobs/fetch-job/executions`;
  expect((await resources().api('POST', executions, { tasks, id: 'fetch' })).statusCode).toBe(200);
  // While the slow task runs, the execution's sandbox has its namespace.
  const sandboxId = await eventually('the execution sandbox', async () => (await platform.runtime.list()).find((sandbox) => sandbox.id.startsWith('job-'))?.id, 30_000);
  const namespace = await eventually('its namespace', async () => (fs.existsSync(platform.runtime.layout(sandboxId).stateFile) && nodeRecord(sandboxId).network ? namespaceOf(sandboxId) : undefined), 30_000);
  const done = await eventually('the execution to end', async () => {
    const body = (await resources().api('GET', `${executions}/fetch`)).json();
    return TERMINAL_EXECUTION_STATUSES.includes(body.status) ? body : undefined;
  }, 60_000);
  const failed = done.status === 'succeeded' ? [] : (await resources().api('GET', `${executions}/fetch/tasks`)).json();
  expect({ status: done.status, failed }).toEqual({ status: 'succeeded', failed: [] });
  expect(done.stats).toMatchObject({ total: 3, success: 3 });
  // Refusals are events of the job, naming the execution.
  await eventually('the refusal events', async () => {
    const events = (await resources().api('GET', '/v0/jobs/fetch-job')).json().events as { type: string; message: string }[];
    const expected = [`egress refused: 'second.test': not in spec.network.allowedDomains (execution fetch)`, `egress refused: '${first}': not in spec.network.allowedDomains (execution fetch)`];
    return expected.every((message) => events.some((event) => event.type === 'Warning' && event.message === message)) ? true : undefined;
  });
  await eventually('the execution sandbox removed', async () => ((await platform.runtime.status(sandboxId)) === undefined ? true : undefined), 60_000);
  expectNoNetworkLeft(sandboxId, namespace);
});

test('bad input is a 400 naming the entry, for every kind, on create and update', async () => {
  const api = resources().api;
  const cases: [string, object, string][] = [
    ['agents', { allowedDomains: ['first.test', 'exa mple.com'] }, "body.spec.network.allowedDomains[1] 'exa mple.com' is not a domain name"],
    ['jobs', { forbiddenDomains: ['10.0.0.1/8'] }, "body.spec.network.forbiddenDomains[0] '10.0.0.1/8' has host bits set"],
    ['functions', { proxy: { allowedDomains: ['ok.test', 'a.*.test'] } }, 'body.spec.network.proxy.allowedDomains[1]'],
    ['models', { internet: 'no' }, 'body.spec.network.internet'],
    ['agents', { vpc: 'x' }, 'vpc'],
  ];
  for (const [kind, networkSpec, message] of cases) {
    const res = await api('POST', `/v0/${kind}`, { metadata: { name: 'bad-network' }, spec: { network: networkSpec } });
    expect({ kind, networkSpec, status: res.statusCode }).toEqual({ kind, networkSpec, status: 400 });
    expect(res.json().message).toContain(message);
  }
  expect((await api('POST', '/v0/agents', { metadata: { name: 'good-network' }, spec: { network: { allowedDomains: ['first.test'] } } })).statusCode).toBe(200);
  const put = await api('PUT', '/v0/agents/good-network', { metadata: { name: 'good-network' }, spec: { network: { allowedDomains: ['*.'] } } });
  expect(put.statusCode).toBe(400);
  expect(put.json().message).toContain("body.spec.network.allowedDomains[0] '*.'");
  expect((await api('GET', '/v0/agents/good-network')).json().spec.network).toEqual({ allowedDomains: ['first.test'] });
});

test('where nodes have no networking, a workload asking for network gets the same 400 as a sandbox', async () => {
  const off = await startTestApp({ taskQueue: unique('wl-network-off'), sandboxNetwork: false });
  try {
    const call = (url: string, payload: object) => off.call(tenant.admin.apiKey, { method: 'POST', url, payload, workspace: tenant.workspace });
    const network = { allowedDomains: ['first.test'] };
    const sandbox = await call('/v0/sandboxes', { metadata: { name: 'off-box' }, spec: { network } });
    expect(sandbox.statusCode).toBe(400);
    for (const kind of ['agents', 'functions', 'models', 'jobs']) {
      const res = await call(`/v0/${kind}`, { metadata: { name: 'off-net' }, spec: { network } });
      expect({ kind, status: res.statusCode, message: res.json().message }).toEqual({ kind, status: 400, message: sandbox.json().message });
    }
    // No egress at all is a policy such a node applies.
    expect((await call('/v0/agents', { metadata: { name: 'off-none' }, spec: { network: { internet: false } } })).statusCode).toBe(200);
  } finally {
    await off.close();
  }
});
