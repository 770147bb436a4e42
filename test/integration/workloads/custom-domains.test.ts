import type { FastifyInstance } from 'fastify';
import http from 'node:http';
import path from 'node:path';
import { createCustomDomainControlActivities } from '../../../activities/custom-domain-control';
import { deployFolder } from '../../../cli/deploy';
import { meterEventId } from '../../../domain/billing/metering';
import { customDomainUsageTicks, customDomainWorkflowId } from '../../../domain/custom-domain/custom-domain';
import { addIdentity, createTenant, startTestApp, unique, type TestApp, type TestIdentity, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { testRuntime } from '../../helpers/sandbox-runtime';
import { startControlWorker, type RunningWorker } from '../../helpers/workers';
import { deployTarget, startWorkloadPlatform, stopRuntimeTest } from '../../helpers/runtime-platform';
import { outboxEvents } from '../../helpers/usage-outbox';
import { repoRoot } from '../../../scripts/stack/binaries';

// Custom domains: CRUD on base_url, Host routing on a real run_url listener to deployed examples,
// metering by the domain's workflow.
const EXAMPLES = path.join(repoRoot(), 'examples');

let t: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let member: TestIdentity;
let gateway: FastifyInstance;
let runPort: number;
let control: RunningWorker;
let node: RunningWorker;
let runtime: ReturnType<typeof testRuntime>;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('domains') });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  tenant = await createTenant(t.app.pg, 'dom');
  other = await createTenant(t.app.pg, 'dom-other');
  member = await addIdentity(t.app.pg, { accountId: tenant.accountId, workspaceId: tenant.workspaceId, role: 'member' });
  let runUrl: string;
  ({ runtime, gateway, runUrl, control, node } = await startWorkloadPlatform(t));
  runPort = Number(new URL(runUrl).port);
  const target = deployTarget(t, tenant);
  expect((await deployFolder(path.join(EXAMPLES, 'agent'), target, { name: 'echo' })).status).toBe('DEPLOYED');
  expect((await deployFolder(path.join(EXAMPLES, 'model'), target)).status).toBe('DEPLOYED');
}, 120_000);

afterAll(() => stopRuntimeTest({ runtime, node, control, gateway, t }), 60_000);

const resources = () => tenantResources(t, tenant);
const api: ReturnType<typeof tenantResources>['api'] = (...args) => resources().api(...args);
const otherApi: ReturnType<typeof tenantResources>['api'] = (...args) => tenantResources(t, other).api(...args);
/** A host name nobody else uses (host names are platform-wide and the test database outlives a run). */
const freshDomain = (label: string) => `${unique(label)}.example.test`;
const domainSpec = (domain: string, kind: string, name: string) => ({ domain, target: { kind, name } });

/** A request to the run_url listener, as a client resolving `host` to it would send it. */
function viaHost(host: string, pathname: string, init: { method?: string; body?: unknown; key?: string | null } = {}) {
  const key = init.key === undefined ? tenant.admin.apiKey : init.key;
  const payload = init.body === undefined ? undefined : JSON.stringify(init.body);
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port: runPort,
        method: init.method ?? 'POST',
        path: pathname,
        headers: { host, 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

const domainUsage = (resourceUuid: string) => outboxEvents(t.app.pg, tenant.accountId, resourceUuid);

describe('the custom domain resource', () => {
  test('invalid host names and targets are refused with 400 naming the field', async () => {
    const cases: [unknown, string][] = [
      [domainSpec('WWW.Example.test', 'agent', 'echo'), 'body.spec.domain'],
      [domainSpec('www.example.test:8443', 'agent', 'echo'), 'must not carry a port'],
      [domainSpec('192.168.1.20', 'agent', 'echo'), 'is an IP address'],
      [domainSpec('[::1]', 'agent', 'echo'), 'is an IP address'],
      [domainSpec('intranet', 'agent', 'echo'), 'at least two labels'],
      [domainSpec('bad_label.example.test', 'agent', 'echo'), 'is not a DNS name'],
      [domainSpec('www.example.test', 'job', 'echo'), 'body.spec.target.kind'],
      [domainSpec('www.example.test', 'agent', 'Not A Name'), 'body.spec.target.name'],
      [{ domain: 'www.example.test' }, 'body.spec.target is required'],
      [{ target: { kind: 'agent', name: 'echo' } }, 'body.spec.domain is required'],
    ];
    for (const [spec, message] of cases) {
      const res = await api('POST', '/v0/customdomains', { metadata: { name: 'bad' }, spec });
      expect({ spec, status: res.statusCode }).toEqual({ spec, status: 400 });
      expect(res.json()).toEqual({ error: 'bad_request', message: expect.stringContaining(message) });
    }
    // The platform's own run_url host would take over every workload's route.
    const own = await api('POST', '/v0/customdomains', { metadata: { name: 'bad' }, spec: domainSpec(new URL(t.config.runUrl).hostname, 'agent', 'echo') });
    expect(own.statusCode).toBe(400);
    expect((await api('GET', '/v0/customdomains/bad')).statusCode).toBe(404);
  });

  test('create, get, list, update; the host name is unique across workspaces; another workspace sees nothing', async () => {
    const domain = freshDomain('crud');
    const created = await api('POST', '/v0/customdomains', { metadata: { name: 'www', labels: { team: 'web' } }, spec: domainSpec(domain, 'agent', 'echo') });
    expect(created.statusCode).toBe(200);
    expect(created.json()).toMatchObject({ metadata: { name: 'www', workspace: tenant.workspace, labels: { team: 'web' } }, spec: domainSpec(domain, 'agent', 'echo'), status: 'DEPLOYING' });
    const deployed = await resources().status('customdomains', 'www', 'DEPLOYED', 30_000);
    expect(deployed.metadata.url).toBe(`http://${domain}:${new URL(t.config.runUrl).port}/`);
    const desc = await t.app.temporal.workflow.getHandle(customDomainWorkflowId(tenant.workspace, 'www')).describe();
    expect(desc.searchAttributes).toEqual(expect.objectContaining({ HangarWorkspace: [tenant.workspace], HangarResourceKind: ['custom_domain'], HangarResourceName: ['www'] }));
    expect((await api('GET', '/v0/customdomains')).json().map((d: { metadata: { name: string } }) => d.metadata.name)).toContain('www');

    // Taken: the same name in the workspace, the same host under another name, or in another workspace.
    expect((await api('POST', '/v0/customdomains', { metadata: { name: 'www' }, spec: domainSpec(freshDomain('x'), 'agent', 'echo') })).statusCode).toBe(409);
    const sameHost = await api('POST', '/v0/customdomains', { metadata: { name: 'www2' }, spec: domainSpec(domain, 'model', 'reverse-model') });
    expect(sameHost.statusCode).toBe(409);
    expect(sameHost.json()).toEqual({ error: 'conflict', code: 409, message: `domain '${domain}' is already taken` });
    const elsewhere = await otherApi('POST', '/v0/customdomains', { metadata: { name: 'www' }, spec: domainSpec(domain, 'agent', 'echo') });
    expect(elsewhere.statusCode).toBe(409);
    expect(elsewhere.json().message).not.toContain(tenant.workspace);
    // Nor can an update take a host held elsewhere.
    const theirs = freshDomain('theirs');
    expect((await otherApi('POST', '/v0/customdomains', { metadata: { name: 'theirs' }, spec: domainSpec(theirs, 'agent', 'x') })).statusCode).toBe(200);
    expect((await api('PUT', '/v0/customdomains/www', { metadata: { name: 'www' }, spec: domainSpec(theirs, 'agent', 'echo') })).statusCode).toBe(409);

    // The other workspace neither lists nor reads it, and cannot act in this workspace.
    expect((await otherApi('GET', '/v0/customdomains')).json().map((d: { metadata: { name: string } }) => d.metadata.name)).toEqual(['theirs']);
    expect((await otherApi('GET', '/v0/customdomains/www')).statusCode).toBe(404);
    expect((await otherApi('DELETE', '/v0/customdomains/www')).statusCode).toBe(404);
    const crossing = await t.call(other.admin.apiKey, { method: 'GET', url: '/v0/customdomains/www', workspace: tenant.workspace });
    expect(crossing.statusCode).toBe(403);

    const updated = await api('PUT', '/v0/customdomains/www', { metadata: { name: 'www', displayName: 'Web' }, spec: domainSpec(domain, 'model', 'reverse-model') });
    expect(updated.statusCode).toBe(200);
    expect(updated.json()).toMatchObject({ metadata: { displayName: 'Web', labels: { team: 'web' } }, spec: domainSpec(domain, 'model', 'reverse-model'), status: 'DEPLOYED' });
    expect((await api('PUT', '/v0/customdomains/www', { metadata: { name: 'other' }, spec: domainSpec(domain, 'agent', 'echo') })).statusCode).toBe(400);
    expect((await api('PUT', '/v0/customdomains/nobody', { metadata: { name: 'nobody' }, spec: domainSpec(freshDomain('n'), 'agent', 'echo') })).statusCode).toBe(404);

    await otherApi('DELETE', '/v0/customdomains/theirs');
    await api('DELETE', '/v0/customdomains/www');
    await resources().gone('customdomains', 'www', 30_000);
    await tenantResources(t, other).gone('customdomains', 'theirs', 30_000);
  }, 60_000);

  test('a workspace member manages domains as it does other resources; no credential is 401', async () => {
    const call = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) => t.call(member.apiKey, { method, url, payload, workspace: tenant.workspace });
    expect((await call('POST', '/v0/customdomains', { metadata: { name: 'by-member' }, spec: domainSpec(freshDomain('m'), 'agent', 'echo') })).statusCode).toBe(200);
    expect((await call('GET', '/v0/customdomains/by-member')).statusCode).toBe(200);
    expect((await call('DELETE', '/v0/customdomains/by-member')).statusCode).toBe(200);
    expect((await t.call(undefined, { method: 'GET', url: '/v0/customdomains', workspace: tenant.workspace })).statusCode).toBe(401);
    await resources().gone('customdomains', 'by-member', 30_000);
  });
});

/** A PUT of the domain `switch`'s spec, which must be taken. */
async function put(spec: ReturnType<typeof domainSpec>) {
  expect((await api('PUT', '/v0/customdomains/switch', { metadata: { name: 'switch' }, spec })).statusCode).toBe(200);
}

/**
 * The gateway's answer once `changed` says the change reached it: the gateway hears of a route
 * change by PostgreSQL's NOTIFY, a few milliseconds after the PUT's commit; it must within 1.5 s,
 * before its cached route (2 s) could have expired by itself.
 */
async function soon<T>(ask: () => Promise<T>, changed: (answer: T) => boolean): Promise<T> {
  const deadline = Date.now() + 1_500;
  let answer = await ask();
  while (!changed(answer) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    answer = await ask();
  }
  return answer;
}

describe('routing by Host on run_url', () => {
  test('a domain serves its target; credentials are checked for its workspace; run_url paths keep working', async () => {
    const domain = freshDomain('route');
    await api('POST', '/v0/customdomains', { metadata: { name: 'route' }, spec: domainSpec(domain, 'agent', 'echo') });
    await resources().status('customdomains', 'route', 'DEPLOYED', 30_000);

    // Port and case of the Host header do not matter.
    expect(await viaHost(`${domain.toUpperCase()}:${runPort}`, '/', { body: { inputs: 'hello' } })).toEqual({ status: 200, body: { output: 'echo: hello' } });
    expect(await viaHost(domain, '/?x=1', { body: { inputs: 'plain' } })).toEqual({ status: 200, body: { output: 'echo: plain' } });
    // The agent is served at its root only, as on run_url.
    expect(await viaHost(domain, '/elsewhere', { body: { inputs: 'x' } })).toMatchObject({ status: 404, body: { error: 'not_found' } });
    // Whatever path names, the domain decides where a request goes.
    expect(await viaHost(domain, `/${other.workspace}/agents/echo`, { body: { inputs: 'x' } })).toMatchObject({ status: 404 });

    expect(await viaHost(domain, '/', { body: { inputs: 'x' }, key: null })).toMatchObject({ status: 401, body: { error: 'unauthorized' } });
    const stranger = await viaHost(domain, '/', { body: { inputs: 'x' }, key: other.admin.apiKey });
    expect(stranger).toMatchObject({ status: 403, body: { error: 'access_denied' } });
    expect(stranger.body.message).not.toContain(tenant.workspace);
    expect(await viaHost(domain, '/', { body: { inputs: 'member' }, key: member.apiKey })).toEqual({ status: 200, body: { output: 'echo: member' } });

    // The ordinary run_url address is unchanged, and a host that is no domain routes by path as before.
    expect(await viaHost(`127.0.0.1:${runPort}`, `/${tenant.workspace}/agents/echo`, { body: { inputs: 'direct' } })).toEqual({ status: 200, body: { output: 'echo: direct' } });
    expect(await viaHost(freshDomain('unclaimed'), `/${tenant.workspace}/agents/echo`, { body: { inputs: 'by path' } })).toEqual({ status: 200, body: { output: 'echo: by path' } });
    expect(await viaHost(freshDomain('unclaimed'), '/', { body: { inputs: 'x' } })).toMatchObject({ status: 404 });
  }, 60_000);

  test('a missing target is 404, one not deployed is 503, a new target or host takes effect at once', async () => {
    const domain = freshDomain('switch');
    await api('POST', '/v0/customdomains', { metadata: { name: 'switch' }, spec: domainSpec(domain, 'agent', 'nobody') });
    await resources().status('customdomains', 'switch', 'DEPLOYED', 30_000);
    const missing = await viaHost(domain, '/', { body: { inputs: 'x' } });
    expect(missing).toEqual({ status: 404, body: { error: 'not_found', message: expect.stringContaining("agent 'nobody' not found") } });

    expect((await api('POST', '/v0/agents', { metadata: { name: 'waiting' } })).statusCode).toBe(200);
    await put(domainSpec(domain, 'agent', 'waiting'));
    expect(await soon(() => viaHost(domain, '/', { body: { inputs: 'x' } }), (answer) => answer.status !== 404)).toEqual({ status: 503, body: { error: 'workload_unavailable', message: expect.stringContaining('UPLOADING') } });

    await put(domainSpec(domain, 'function', 'no-mcp'));
    expect(await soon(() => viaHost(domain, '/mcp', { body: {} }), (answer) => answer.status !== 503)).toMatchObject({ status: 404, body: { message: expect.stringContaining("function 'no-mcp' not found") } });
    expect(await viaHost(domain, '/', { body: {} })).toMatchObject({ status: 404 });

    // Changed to the model: its paths now answer on the domain, right after the PUT.
    await put(domainSpec(domain, 'model', 'reverse-model'));
    const chat = await soon(() => viaHost(domain, '/chat/completions', { body: { messages: [{ role: 'user', content: 'one two three' }] } }), (answer) => answer.status === 200);
    expect(chat.status).toBe(200);
    expect(chat.body.choices[0].message).toEqual({ role: 'assistant', content: 'three two one' });

    // A new host name: the old one stops routing, the new one routes, both at once.
    const moved = freshDomain('moved');
    await put(domainSpec(moved, 'agent', 'echo'));
    expect(await soon(() => viaHost(moved, '/', { body: { inputs: 'moved' } }), (answer) => answer.status === 200)).toEqual({ status: 200, body: { output: 'echo: moved' } });
    expect(await soon(() => viaHost(domain, '/', { body: { inputs: 'x' } }), (answer) => answer.status === 404)).toMatchObject({ status: 404, body: { error: 'not_found' } });

    await api('DELETE', '/v0/customdomains/switch');
    await api('DELETE', '/v0/agents/waiting');
    await resources().gone('customdomains', 'switch', 30_000);
  }, 60_000);

  test('delete stops routing at once, frees the host name, and ends the metering with the last period', async () => {
    const domain = freshDomain('gone');
    await api('POST', '/v0/customdomains', { metadata: { name: 'gone' }, spec: domainSpec(domain, 'agent', 'echo') });
    await resources().status('customdomains', 'gone', 'DEPLOYED', 30_000);
    const id = await resources().idOf('customdomains', 'gone');
    // Cached by the gateway before the deletion.
    expect((await viaHost(domain, '/', { body: { inputs: 'x' } })).status).toBe(200);

    const deleted = await api('DELETE', '/v0/customdomains/gone');
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json().status).toBe('DELETING');
    expect(await viaHost(domain, '/', { body: { inputs: 'x' } })).toMatchObject({ status: 404, body: { error: 'not_found' } });
    await resources().gone('customdomains', 'gone', 30_000);
    const handle = t.app.temporal.workflow.getHandle(customDomainWorkflowId(tenant.workspace, 'gone'));
    await handle.result();
    expect((await handle.describe()).status.name).toBe('COMPLETED');

    const events = await domainUsage(id);
    expect(events.length).toBeGreaterThan(0);
    for (const event of events) {
      expect(event).toMatchObject({ resource_type: 'custom_domain', resource_name: 'gone', billing_dimension: 'custom_domain_active_time_hours', workspace: tenant.workspace });
      expect(Number(event.quantity)).toBeGreaterThan(0);
    }
    // The domain existed for well under an hour of this test.
    expect(events.reduce((sum, e) => sum + Number(e.quantity), 0)).toBeLessThan(1);

    // Free again: another workspace claims it, and it routes to that workspace's target.
    expect((await otherApi('POST', '/v0/customdomains', { metadata: { name: 'reused' }, spec: domainSpec(domain, 'agent', 'echo') })).statusCode).toBe(200);
    await tenantResources(t, other).status('customdomains', 'reused', 'DEPLOYED', 30_000);
    expect(await viaHost(domain, '/', { body: { inputs: 'x' } })).toMatchObject({ status: 403 });
    expect(await viaHost(domain, '/', { body: { inputs: 'x' }, key: other.admin.apiKey })).toMatchObject({ status: 404, body: { message: expect.stringContaining("agent 'echo' not found") } });
    await otherApi('DELETE', '/v0/customdomains/reused');
    await tenantResources(t, other).gone('customdomains', 'reused', 30_000);
  }, 60_000);

  test('with the control worker down a new domain waits (503), routes once the worker is back, and a delete still stops routing', async () => {
    await control.stop();
    const domain = freshDomain('later');
    try {
      expect((await api('POST', '/v0/customdomains', { metadata: { name: 'later' }, spec: domainSpec(domain, 'agent', 'echo') })).statusCode).toBe(200);
      expect(await viaHost(domain, '/', { body: { inputs: 'x' } })).toEqual({ status: 503, body: { error: 'domain_unavailable', message: expect.stringContaining('DEPLOYING') } });
      expect(await viaHost(domain, '/', { body: { inputs: 'x' }, key: other.admin.apiKey })).toMatchObject({ status: 403 });
    } finally {
      control = await startControlWorker(t.config, t.app.pg);
    }
    await resources().status('customdomains', 'later', 'DEPLOYED', 30_000);
    expect(await viaHost(domain, '/', { body: { inputs: 'back' } })).toEqual({ status: 200, body: { output: 'echo: back' } });

    const id = await resources().idOf('customdomains', 'later');
    await control.stop();
    let deletedBy: number;
    try {
      expect((await api('DELETE', '/v0/customdomains/later')).statusCode).toBe(200);
      deletedBy = Date.now();
      expect(await viaHost(domain, '/', { body: { inputs: 'x' } })).toMatchObject({ status: 404 });
      // The record (and the host name) stays until the workflow has recorded the last period.
      expect((await api('GET', '/v0/customdomains/later')).json().status).toBe('DELETING');
    } finally {
      control = await startControlWorker(t.config, t.app.pg);
    }
    await resources().gone('customdomains', 'later', 30_000);
    // Billed up to the DELETE, not up to when the returning worker got to it. (Event times are
    // whole seconds at or before the period's start, so each sum is at or before the period's end.)
    const events = await domainUsage(id);
    expect(events.length).toBeGreaterThan(0);
    for (const event of events) expect(event.event_time + Number(event.quantity) * 3600).toBeLessThanOrEqual(deletedBy! / 1000 + 0.01);
  }, 90_000);

  test('a metering period recorded twice counts once', async () => {
    const activities = createCustomDomainControlActivities({ pg: t.app.pg });
    const key = { id: '5b0f8d3e-6c1a-4f7e-8a2b-9d4c3e2f1a00', workspace: tenant.workspace, workspaceId: tenant.workspaceId, name: unique('retried') };
    const to = Math.floor(Date.now() / 1000) * 1000;
    const period = { key, from: to - 600_000, to };
    expect(await activities.recordCustomDomainUsage(period)).toBe(false); // no such record: metering would end
    await activities.recordCustomDomainUsage(period);
    const events = (await domainUsage(key.id)).filter((e) => e.resource_name === key.name);
    expect(events).toHaveLength(1);
    expect(Number(events[0].quantity)).toBeCloseTo(1 / 6, 6);
    expect(events[0].id).toBe(meterEventId(customDomainUsageTicks({ ...period, accountId: tenant.accountId })[0]));
  });
});
