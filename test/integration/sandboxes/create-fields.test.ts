import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { stopRuntimeTest, startSandboxPlatform, type SandboxPlatform } from '../../helpers/runtime-platform';

/**
 * Create and update as the reference SDK sends them (issue 16): `SandboxInstance.create` sends
 * spec.region, spec.runtime.generation ("mk3"), snapshotEnabled, expires (toISOString()) and the
 * image `blaxel/base-image:latest`; its update helpers send the whole sandbox back.
 */

let t: TestApp;
let tenant: TestTenant;
let platform: SandboxPlatform;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('create-fields'), sandboxUrlTemplate: 'http://{region}.sandboxes.test:8082/{workspace_id}/{sandbox_id}' });
  tenant = await createTenant(t.app.pg, 'fields');
  platform = await startSandboxPlatform(t);
}, 60_000);

afterAll(() => stopRuntimeTest({ ...platform, t }), 60_000);

const resources = () => tenantResources(t, tenant);
const api: ReturnType<typeof tenantResources>['api'] = (...args) => resources().api(...args);
const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

test('the body SandboxInstance.create sends is accepted, shown back, and the sandbox starts from base-image', async () => {
  const expires = inAnHour();
  const spec = {
    region: 'us-pdx-1',
    runtime: { image: 'blaxel/base-image:latest', memory: 128, ports: [], envs: [], generation: 'mk3', snapshotEnabled: true, expires },
  };
  const created = await api('POST', '/v0/sandboxes', { metadata: { name: 'sdk-shaped', labels: { team: 'a' } }, spec });
  expect(created.statusCode).toBe(200);
  expect(created.json().spec).toMatchObject(spec);
  expect(created.json().metadata.url).toBe(`http://us-pdx-1.sandboxes.test:8082/${tenant.workspace}/sdk-shaped`);
  expect(created.json().expiresIn).toBeGreaterThan(3_500);
  expect(created.json().expiresIn).toBeLessThanOrEqual(3_600);
  const deployed = await resources().status('sandboxes', 'sdk-shaped', 'DEPLOYED', 90_000);
  expect(deployed.spec.runtime.snapshotEnabled).toBe(true);

  // The SDK's updateTtl: the sandbox as read, sent back with a new ttl.
  const sentBack = { ...deployed, spec: { ...deployed.spec, runtime: { ...deployed.spec.runtime, ttl: '2h' } } };
  const updated = await api('PUT', '/v0/sandboxes/sdk-shaped', sentBack);
  expect(updated.statusCode).toBe(200);
  expect(updated.json().spec.runtime).toMatchObject({ ttl: '2h', expires, generation: 'mk3' });
  expect(updated.json().metadata.url).toBe(`http://us-pdx-1.sandboxes.test:8082/${tenant.workspace}/sdk-shaped`);
}, 120_000);

test('image references resolve by name: [namespace/]name[:tag], base-image and base', async () => {
  for (const [i, image] of ['base', 'base-image', 'blaxel/base-image:latest', 'hangar/base:latest', 'base-image:v2'].entries()) {
    const created = await api('POST', '/v0/sandboxes', { metadata: { name: `img-${i}` }, spec: { runtime: { image, memory: 128 } } });
    expect(created.statusCode).toBe(200);
    expect(created.json().spec.runtime.image).toBe(image);
  }
  const unknown = await api('POST', '/v0/sandboxes', { metadata: { name: 'img-bad' }, spec: { runtime: { image: 'blaxel/nodejs:latest' } } });
  expect(unknown.statusCode).toBe(400);
  expect(unknown.json().message).toContain('body.spec.runtime.image');
  expect(unknown.json().message).toContain("'blaxel/nodejs:latest' does not exist");
});

test('bad values are 400s naming the field; unknown fields stay 400', async () => {
  const cases: [object, string][] = [
    [{ runtime: { expires: new Date(Date.now() - 60_000).toISOString() } }, 'body.spec.runtime.expires must be in the future'],
    [{ runtime: { expires: 'tomorrow' } }, 'body.spec.runtime.expires'],
    [{ runtime: { expires: 1_900_000_000 } }, 'body.spec.runtime.expires'],
    [{ runtime: { snapshotEnabled: 'yes' } }, 'body.spec.runtime.snapshotEnabled'],
    [{ runtime: { generation: 3 } }, 'body.spec.runtime.generation'],
    [{ region: 'Not A Region' }, 'body.spec.region'],
    [{ region: '' }, 'body.spec.region'],
    [{ runtime: { gpu: 1 } }, 'gpu'],
    [{ zone: 'a' }, 'zone'],
  ];
  for (const [spec, field] of cases) {
    const res = await api('POST', '/v0/sandboxes', { metadata: { name: 'bad-fields' }, spec });
    expect({ spec, status: res.statusCode }).toEqual({ spec, status: 400 });
    expect(res.json().message).toContain(field);
  }
});

test('region cannot change on update; a new expires must be in the future; expires is enforced like ttl', async () => {
  const expires = new Date(Date.now() + 4_000).toISOString();
  const created = await api('POST', '/v0/sandboxes', { metadata: { name: 'short' }, spec: { region: 'eu-1', runtime: { memory: 128, expires } } });
  expect(created.statusCode).toBe(200);
  const moved = await api('PUT', '/v0/sandboxes/short', { metadata: { name: 'short' }, spec: { ...created.json().spec, region: 'eu-2' } });
  expect(moved.statusCode).toBe(400);
  expect(moved.json().message).toContain('body.spec.region cannot change');
  const past = new Date(Date.now() - 1_000).toISOString();
  const backdated = await api('PUT', '/v0/sandboxes/short', { metadata: { name: 'short' }, spec: { ...created.json().spec, runtime: { memory: 128, expires: past } } });
  expect(backdated.statusCode).toBe(400);
  expect(backdated.json().message).toContain('body.spec.runtime.expires must be in the future');
  // The lifecycle deletes it at its expiry, as it does at a ttl.
  await resources().gone('sandboxes', 'short', 90_000);
}, 120_000);
