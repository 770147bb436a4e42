import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { refusalReporter } from '../../../runtime/network/refusal-events';
import type { SandboxNetwork } from '../../../runtime/network/sandbox-network';
import type { SandboxRecord } from '../../../runtime/state-store';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { stopRuntimeTest, startSandboxPlatform, type SandboxPlatform } from '../../helpers/runtime-platform';
import { exec, until } from '../../helpers/sandbox-runtime';
import { startTestInternet, testSandboxNetwork, type TestInternet } from '../../helpers/test-internet';

/**
 * `spec.network` through the management API: checked entry by entry (a 400 names the bad one),
 * given to the node at the sandbox's start, changed with PUT on the running sandbox (the next
 * connection obeys the new policy), and nothing of the sandbox's network left once it is deleted.
 * The node resolves only the test's own hosts (test-internet.ts): nothing leaves the machine.
 */
jest.setTimeout(120_000);

let t: TestApp;
let tenant: TestTenant;
let platform: SandboxPlatform;
let internet: TestInternet;
let network: SandboxNetwork;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('network-api') });
  tenant = await createTenant(t.app.pg, 'network');
  internet = await startTestInternet(2);
  const [first, second] = internet.hosts;
  network = testSandboxNetwork(path.join(t.config.dataDir, `network-${process.pid}`), () => ({ 'first.test': [first], 'second.test': [second] }), {
    onRefused: refusalReporter(t.app.pg, () => undefined),
  });
  await network.start();
  platform = await startSandboxPlatform(t, { network });
});

afterAll(async () => {
  await stopRuntimeTest({ ...platform, t });
  await network?.tearDown();
  await internet?.close();
});

const resources = () => tenantResources(t, tenant);
const api: ReturnType<typeof tenantResources>['api'] = (...args) => resources().api(...args);

/** The node's record of the sandbox named `name`. */
async function nodeRecord(name: string): Promise<SandboxRecord> {
  for (const sandbox of await platform.runtime.list()) {
    const record = JSON.parse(fs.readFileSync(platform.runtime.layout(sandbox.id).stateFile, 'utf8')) as SandboxRecord;
    if (record.spec.name === name) return record;
  }
  throw new Error(`no sandbox ${name} on the node`);
}

async function curlIn(name: string, url: string): Promise<string> {
  const record = await nodeRecord(name);
  return (await exec(platform.runtime.socketPath(record.spec.id), `curl -sS --max-time 20 ${url}`)).stdout;
}

test('a malformed domain, address or CIDR block is a 400 naming the entry', async () => {
  const cases: [object, string][] = [
    [{ allowedDomains: ['first.test', 'exa mple.com'] }, "body.spec.network.allowedDomains[1] 'exa mple.com' is not a domain name"],
    [{ forbiddenDomains: ['10.0.0.1/8'] }, "body.spec.network.forbiddenDomains[0] '10.0.0.1/8' has host bits set"],
    [{ proxy: { allowedDomains: ['ok.test', '*.ok.test', 'a.*.test'] } }, 'body.spec.network.proxy.allowedDomains[2]'],
    [{ internet: 'no' }, 'body.spec.network.internet'],
    [{ vpc: 'x' }, 'vpc'],
  ];
  for (const [networkSpec, message] of cases) {
    const res = await api('POST', '/v0/sandboxes', { metadata: { name: 'bad-network' }, spec: { network: networkSpec } });
    expect({ networkSpec, status: res.statusCode }).toEqual({ networkSpec, status: 400 });
    expect(res.json().message).toContain(message);
  }
});

test('the policy reaches the node at start; PUT changes it for the next connection; internet cannot change', async () => {
  const [first, second] = internet.hosts;
  const spec = { runtime: { memory: 128 }, network: { allowedDomains: ['first.test'] } };
  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'netbox' }, spec })).statusCode).toBe(200);
  const deployed = await resources().status('sandboxes', 'netbox', 'DEPLOYED', 90_000);
  expect(deployed.spec.network).toEqual({ allowedDomains: ['first.test'] });
  expect(await curlIn('netbox', 'http://first.test/')).toContain(`"local":"${first}"`);
  expect(await curlIn('netbox', 'http://second.test/')).toMatch(/refused second\.test: not in spec\.network\.allowedDomains/);
  // The refusal is an event of the sandbox, naming the destination and the rule.
  await until('the refusal event', async () => {
    const events = (await api('GET', '/v0/sandboxes/netbox')).json().events as { type: string; message: string }[];
    return events.some((event) => event.type === 'Warning' && event.message === "egress refused: 'second.test': not in spec.network.allowedDomains");
  });

  const changed = await api('PUT', '/v0/sandboxes/netbox', { ...deployed, spec: { ...deployed.spec, network: { allowedDomains: ['second.test'] } } });
  expect(changed.statusCode).toBe(200);
  // The workflow hands the policy to the node; from then on each new connection obeys it.
  await until('the new policy on the node', async () => (await curlIn('netbox', 'http://second.test/')).includes(`"local":"${second}"`));
  expect(await curlIn('netbox', 'http://first.test/')).toMatch(/refused first\.test/);

  const noInternet = await api('PUT', '/v0/sandboxes/netbox', { ...deployed, spec: { ...deployed.spec, network: { internet: false } } });
  expect(noInternet.statusCode).toBe(400);
  expect(noInternet.json().message).toContain('body.spec.network.internet cannot change');

  const netns = path.basename((await nodeRecord('netbox')).network!.netnsPath);
  expect((await api('DELETE', '/v0/sandboxes/netbox')).statusCode).toBe(200);
  await resources().gone('sandboxes', 'netbox', 90_000);
  expect(execFileSync('ip', ['netns', 'list']).toString()).not.toContain(netns);
  expect(execFileSync('ip', ['-o', 'link']).toString()).not.toContain(`${network.plan.interfacePrefix}${netns.slice('hangar-'.length)}`);
});

test('on a platform whose nodes give no network (HANGAR_SANDBOX_NETWORK=off), a policy is a 400, internet: false is accepted', async () => {
  const off = await startTestApp({ taskQueue: unique('network-off'), sandboxNetwork: false });
  try {
    const offTenant = await createTenant(off.app.pg, 'network-off');
    const create = (name: string, network: object) =>
      off.call(offTenant.admin.apiKey, { method: 'POST', url: '/v0/sandboxes', workspace: offTenant.workspace, payload: { metadata: { name }, spec: { network } } });
    const refused = await create('with-policy', { allowedDomains: ['first.test'] });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().message).toContain('body.spec.network: sandboxes of this platform have no outbound network (HANGAR_SANDBOX_NETWORK is off)');
    expect((await create('without-internet', { internet: false })).statusCode).toBe(200);
  } finally {
    await off.close();
  }
});
