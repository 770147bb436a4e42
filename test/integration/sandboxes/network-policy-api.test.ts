import fs from 'node:fs';
import path from 'node:path';
import { refusalReporter } from '../../../runtime/network/refusal-events';
import type { SandboxNetwork } from '../../../runtime/network/sandbox-network';
import { TrafficRecorder } from '../../../runtime/network/traffic-recorder';
import type { SandboxRecord } from '../../../runtime/state-store';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { stopRuntimeTest, startSandboxPlatform, type SandboxPlatform } from '../../helpers/runtime-platform';
import { exec, until } from '../../helpers/sandbox-runtime';
import { startTestInternet, testSandboxNetwork, type TestInternet } from '../../helpers/test-internet';
import { startNodeWorker } from '../../helpers/workers';

/**
 * Default network policies (the platform's, a workspace's), bytes in and out on the sandbox's API
 * status across node worker restarts, and a policy PUT while the node worker is down, through the
 * management API against a real node (its network, nftables, the test internet of
 * test-internet.ts: nothing leaves the machine).
 */
jest.setTimeout(180_000);

const PLATFORM_DEFAULT = { forbiddenDomains: ['second.test'] };
let t: TestApp;
let tenant: TestTenant;
let platform: SandboxPlatform;
let internet: TestInternet;
let network: SandboxNetwork;
// The node worker's recorder: replaced when the test restarts the worker.
let recorder: TrafficRecorder;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('network-policy'), sandboxNetwork: true, sandboxDefaultNetwork: PLATFORM_DEFAULT });
  tenant = await createTenant(t.app.pg, 'netpolicy');
  internet = await startTestInternet(2);
  const [first, second] = internet.hosts;
  recorder = new TrafficRecorder(t.app.pg);
  network = testSandboxNetwork(path.join(t.config.dataDir, `network-policy-${process.pid}`), () => ({ 'first.test': [first], 'second.test': [second] }), {
    onRefused: refusalReporter(t.app.pg, () => undefined),
    onTraffic: (...counts) => recorder.record(...counts),
  });
  await network.start();
  platform = await startSandboxPlatform(t, { network, warmPool: 0 });
});

afterAll(async () => {
  await stopRuntimeTest({ ...platform, t: undefined });
  await recorder?.close();
  await t?.close();
  await network?.tearDown();
  await internet?.close();
});

const resources = () => tenantResources(t, tenant);
const api: ReturnType<typeof tenantResources>['api'] = (...args) => resources().api(...args);
type Envelope = { spec: { network?: object }; network: { bytesIn: number; bytesOut: number } | null; events: { type: string; message: string }[] };
const get = async (name: string) => (await api('GET', `/v0/sandboxes/${name}`)).json() as Envelope;

async function nodeRecord(name: string): Promise<SandboxRecord> {
  for (const sandbox of await platform.runtime.list()) {
    const record = JSON.parse(fs.readFileSync(platform.runtime.layout(sandbox.id).stateFile, 'utf8')) as SandboxRecord;
    if (record.spec.name === name) return record;
  }
  throw new Error(`no sandbox ${name} on the node`);
}

async function curlIn(name: string, args: string): Promise<string> {
  const record = await nodeRecord(name);
  return (await exec(platform.runtime.socketPath(record.spec.id), `curl -sS --max-time 20 ${args}`)).stdout;
}

/** Creates a sandbox and answers its spec's network as stored. */
async function createdNetwork(name: string, network?: object): Promise<object | undefined> {
  const res = await api('POST', '/v0/sandboxes', { metadata: { name }, spec: { runtime: { memory: 128 }, ...(network ? { network } : {}) } });
  expect(res.statusCode).toBe(200);
  return res.json().spec.network;
}

test('a workspace default is checked entry by entry and shown back; null removes it', async () => {
  const bad = await api('PUT', `/v0/workspaces/${tenant.workspace}`, { defaultSandboxNetwork: { allowedDomains: ['first.test', 'exa mple.com'] } });
  expect(bad.statusCode).toBe(400);
  expect(bad.json().message).toContain("body.defaultSandboxNetwork.allowedDomains[1] 'exa mple.com' is not a domain name");
  const badCidr = await api('PUT', `/v0/workspaces/${tenant.workspace}`, { defaultSandboxNetwork: { proxy: { forbiddenDomains: ['10.0.0.1/8'] } } });
  expect(badCidr.json().message).toContain("body.defaultSandboxNetwork.proxy.forbiddenDomains[0] '10.0.0.1/8' has host bits set");
  expect((await api('PUT', `/v0/workspaces/${tenant.workspace}`, { defaultSandboxNetwork: { vpc: 'x' } })).statusCode).toBe(400);
  expect((await api('GET', `/v0/workspaces/${tenant.workspace}`)).json().defaultSandboxNetwork).toBeNull();

  const set = await api('PUT', `/v0/workspaces/${tenant.workspace}`, { defaultSandboxNetwork: { allowedDomains: ['first.test'] } });
  expect(set.statusCode).toBe(200);
  expect(set.json().defaultSandboxNetwork).toEqual({ allowedDomains: ['first.test'] });
  // A label change leaves the default alone.
  expect((await api('PUT', `/v0/workspaces/${tenant.workspace}`, { labels: { team: 'net' } })).json().defaultSandboxNetwork).toEqual({ allowedDomains: ['first.test'] });
  const cleared = await api('PUT', `/v0/workspaces/${tenant.workspace}`, { defaultSandboxNetwork: null });
  expect(cleared.json().defaultSandboxNetwork).toBeNull();
});

test("new sandboxes get their own policy, else their workspace's, else the platform's; the stored spec shows it and the node obeys it", async () => {
  expect(await createdNetwork('from-platform')).toEqual(PLATFORM_DEFAULT);
  await api('PUT', `/v0/workspaces/${tenant.workspace}`, { defaultSandboxNetwork: { allowedDomains: ['first.test'] } });
  expect(await createdNetwork('own', { forbiddenDomains: ['first.test'] })).toEqual({ forbiddenDomains: ['first.test'] });
  expect(await createdNetwork('inherits')).toEqual({ allowedDomains: ['first.test'] });
  // Another workspace's default is not this one's: its sandboxes get the platform's.
  const other = await createTenant(t.app.pg, 'netother');
  const elsewhere = await t.call(other.admin.apiKey, { method: 'POST', url: '/v0/sandboxes', workspace: other.workspace, payload: { metadata: { name: 'elsewhere' }, spec: { runtime: { memory: 128 } } } });
  expect(elsewhere.json().spec.network).toEqual(PLATFORM_DEFAULT);
  for (const name of ['from-platform', 'own']) await api('DELETE', `/v0/sandboxes/${name}`);
  await t.call(other.admin.apiKey, { method: 'DELETE', url: '/v0/sandboxes/elsewhere', workspace: other.workspace });

  await resources().status('sandboxes', 'inherits', 'DEPLOYED', 90_000);
  expect(await curlIn('inherits', 'http://first.test/')).toContain(`"local":"${internet.hosts[0]}"`);
  expect(await curlIn('inherits', 'http://second.test/')).toMatch(/refused second\.test: not in spec\.network\.allowedDomains/);
  // A later change of the default leaves the sandbox's policy as it was given.
  await api('PUT', `/v0/workspaces/${tenant.workspace}`, { defaultSandboxNetwork: { internet: false } });
  expect((await get('inherits')).spec.network).toEqual({ allowedDomains: ['first.test'] });
  await api('PUT', `/v0/workspaces/${tenant.workspace}`, { defaultSandboxNetwork: null });
});

test('bytes in and out of a real download are on the sandbox status, and add up across a node worker restart', async () => {
  expect((await curlIn('inherits', '-o /dev/null -w "%{size_download}" http://first.test/bytes/3000000')).trim()).toBe('3000000');
  const first = await until('the download counted on the status', async () => {
    const counted = (await get('inherits')).network;
    return counted && counted.bytesIn >= 3_000_000 ? counted : undefined;
  });
  expect(first.bytesOut).toBeGreaterThan(0);
  // A new worker counts from zero; what it counts adds to what the previous one recorded.
  await platform.node.stop();
  await recorder.close();
  recorder = new TrafficRecorder(t.app.pg);
  platform.node = await startNodeWorker(t.config, platform.runtime);
  expect((await curlIn('inherits', '-o /dev/null -w "%{size_download}" http://first.test/bytes/2000000')).trim()).toBe('2000000');
  const total = await until('both downloads counted', async () => {
    const counted = (await get('inherits')).network;
    return counted && counted.bytesIn >= first.bytesIn + 2_000_000 ? counted : undefined;
  });
  expect(total.bytesOut).toBeGreaterThan(first.bytesOut);
});

test('a policy PUT while the node worker is down is not lost: an event says it is pending, and it applies once the worker is back', async () => {
  const [, second] = internet.hosts;
  await platform.node.stop();
  const current = await get('inherits');
  const put = await api('PUT', '/v0/sandboxes/inherits', { ...current, metadata: { name: 'inherits' }, spec: { ...current.spec, network: { allowedDomains: ['second.test'] } } });
  expect(put.statusCode).toBe(200);
  await until(
    'the pending event',
    async () => (await get('inherits')).events.some((event) => event.type === 'Warning' && event.message.startsWith('network policy not applied yet: the node has not taken it')),
    60_000,
  );
  // Until the node takes it, the sandbox has its previous policy.
  expect(await curlIn('inherits', 'http://second.test/')).toMatch(/not in spec\.network\.allowedDomains/);
  platform.node = await startNodeWorker(t.config, platform.runtime);
  await until('the new policy on the node', async () => (await curlIn('inherits', 'http://second.test/')).includes(`"local":"${second}"`), 90_000);
  expect(await curlIn('inherits', 'http://first.test/')).toMatch(/refused first\.test/);
  await until('the applied event', async () => (await get('inherits')).events.some((event) => event.type === 'Normal' && event.message === 'network policy applied on the node'));
});

test('a PUT whose spec leaves out network gets the defaults as they are then (here the platform one)', async () => {
  const current = await get('inherits');
  const { network: _dropped, ...rest } = current.spec as { network?: object };
  const put = await api('PUT', '/v0/sandboxes/inherits', { metadata: { name: 'inherits' }, spec: rest });
  expect(put.statusCode).toBe(200);
  expect(put.json().spec.network).toEqual(PLATFORM_DEFAULT);
  await until('the platform default on the node', async () => (await curlIn('inherits', 'http://first.test/')).includes(`"local":"${internet.hosts[0]}"`), 60_000);
  expect(await curlIn('inherits', 'http://second.test/')).toMatch(/refused second\.test: spec\.network\.forbiddenDomains entry 'second\.test'/);
});
