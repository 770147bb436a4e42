import path from 'node:path';
import { flushUsageOutbox } from '../../../activities/usage-flush';
import { usageTables } from '../../../domain/billing/storage';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { buildTestImage, pushTestImage, startRegistry, type TestRegistry } from '../../helpers/oci-registry';
import { tenantResources } from '../../helpers/resources';
import { stopRuntimeTest, startSandboxPlatform, type SandboxPlatform } from '../../helpers/runtime-platform';
import { exec } from '../../helpers/sandbox-runtime';
import { eventually } from '../../helpers/workers';

// Storage billing through the real metering path: the sandbox workflow measures on the node,
// records ticks, the flush moves them into ClickHouse, and the test reads ClickHouse. A sandbox
// pays `sandbox_image_storage_gbs` for its image as stored plus its writable layer; a ready
// snapshot pays `sandbox_snapshot_storage_gbs` for its files until it is deleted.
jest.setTimeout(180_000);

const GB = 1024 ** 3;
const MiB = 1024 * 1024;
const MEMORY_MB = 128;

let t: TestApp;
let tenant: TestTenant;
let platform: SandboxPlatform;
let registry: TestRegistry;
let scratch: string;
// The node's store outlives runs: repositories of this run's own are pulled afresh.
const repository = unique('test/billed');

beforeAll(async () => {
  // No standby during the test: every period is RUNNING, so compute measures the seconds.
  t = await startTestApp({ taskQueue: unique('storage-billing'), sandboxIdleSeconds: 3600 });
  tenant = await createTenant(t.app.pg, 'bill');
  platform = await startSandboxPlatform(t);
  scratch = path.join(t.config.dataDir, unique('billing-scratch'));
  registry = await startRegistry(path.join(scratch, 'registry'));
  const layout = path.join(scratch, 'layout');
  buildTestImage(layout, 'small', { files: { '/marker.txt': 'small\n' }, env: ['PATH=/bin'] });
  buildTestImage(layout, 'large', { files: { '/marker.txt': 'large\n' }, randomFiles: { '/data/blob': 8 * MiB }, env: ['PATH=/bin'] });
  pushTestImage(layout, 'small', `${registry.address}/${repository}:small`);
  pushTestImage(layout, 'large', `${registry.address}/${repository}:large`);
}, 120_000);

afterAll(async () => {
  await registry?.close();
  await stopRuntimeTest({ ...platform, t, scratch });
}, 60_000);

const resources = () => tenantResources(t, tenant);
const api: ReturnType<typeof tenantResources>['api'] = (...args) => resources().api(...args);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The account's quantities in ClickHouse after a flush, summed per resource uuid and dimension. */
async function billed(): Promise<Map<string, { resourceType: string; resourceName: string; quantity: number }>> {
  const tables = usageTables(t.config.clickhouseDatabase);
  await flushUsageOutbox(t.app.pg, t.app.clickhouse, tables, { gatherMs: 0 });
  const result = await t.app.clickhouse.query({
    query: `SELECT resource_uuid, billing_dimension, any(resource_type) AS type, any(resource_name) AS name, toString(sum(quantity)) AS quantity
      FROM ${tables.raw} FINAL WHERE account_id = '${tenant.accountId}' GROUP BY resource_uuid, billing_dimension`,
    format: 'JSONEachRow',
  });
  const rows = await result.json<{ resource_uuid: string; billing_dimension: string; type: string; name: string; quantity: string }>();
  return new Map(rows.map((row) => [`${row.resource_uuid}/${row.billing_dimension}`, { resourceType: row.type, resourceName: row.name, quantity: Number(row.quantity) }]));
}

async function sandboxOn(name: string, tag: string): Promise<string> {
  const created = await api('POST', '/v0/sandboxes', { metadata: { name }, spec: { runtime: { image: `${registry.address}/${repository}:${tag}`, memory: MEMORY_MB } } });
  expect(created.statusCode).toBe(200);
  await resources().status('sandboxes', name, 'DEPLOYED', 90_000);
  return resources().idOf('sandboxes', name);
}

/** Bytes a sandbox was billed for as image storage, on average over its life (its compute gives the seconds). */
function averageImageBytes(rows: Awaited<ReturnType<typeof billed>>, id: string): number {
  const seconds = rows.get(`${id}/sandbox_compute_runtime_gbs`)!.quantity / (MEMORY_MB / 1024);
  expect(seconds).toBeGreaterThan(1);
  return (rows.get(`${id}/sandbox_image_storage_gbs`)!.quantity * GB) / seconds;
}

test('a sandbox on a larger image pays for the difference in stored image bytes; a snapshot pays for its files until deleted', async () => {
  const [smallId, largeId] = [await sandboxOn('on-small', 'small'), await sandboxOn('on-large', 'large')];
  const stored = async (tag: string) => (await platform.runtime.findImage(`${registry.address}/${repository}:${tag}`))!.storedBytes;
  const [smallBytes, largeBytes] = [await stored('small'), await stored('large')];
  // 8 MiB of random bytes, once as the registry's blob and once unpacked.
  expect(largeBytes - smallBytes).toBeGreaterThan(16 * MiB);

  // A snapshot of 4 MiB of files, billed from its capture to its deletion.
  expect((await exec(platform.runtime.socketPath(largeId), 'head -c 4194304 /dev/urandom > /home/user/state.bin && sync')).exitCode).toBe(0);
  const captureAsked = Date.now();
  const snapshot = (await api('POST', '/v0/sandboxes/on-large/snapshots', {})).json();
  const captureAnswered = Date.now();
  expect(snapshot).toMatchObject({ status: 'ready', sizeBytes: expect.any(Number) });
  expect(snapshot.sizeBytes).toBeGreaterThan(4 * MiB);
  await pause(3_000);

  const deleteAsked = Date.now();
  expect((await api('DELETE', `/v0/snapshots/${snapshot.id}`)).statusCode).toBe(200);
  for (const name of ['on-small', 'on-large']) expect((await api('DELETE', `/v0/sandboxes/${name}`)).statusCode).toBe(200);
  await eventually('the snapshot record gone', async () => ((await t.app.pg.query('SELECT 1 FROM sandbox_snapshots WHERE id = $1', [snapshot.id])).rowCount === 0 ? true : undefined), 60_000);
  const snapshotGone = Date.now();
  for (const name of ['on-small', 'on-large']) await resources().gone('sandboxes', name);

  const rows = await billed();
  // The difference is the images' and the 4 MiB the large one wrote to its own layer (the small
  // one wrote next to nothing); measured when they went, which is all of their short lives.
  const difference = averageImageBytes(rows, largeId) - averageImageBytes(rows, smallId);
  expect(Math.abs(difference - (largeBytes - smallBytes + 4 * MiB))).toBeLessThan(MiB / 4);
  // And each pays at least for its image as stored.
  expect(averageImageBytes(rows, smallId)).toBeGreaterThanOrEqual(smallBytes);

  const snapshotRow = rows.get(`${snapshot.id}/sandbox_snapshot_storage_gbs`);
  expect(snapshotRow).toMatchObject({ resourceType: 'sandbox', resourceName: 'on-large' });
  const snapshotSeconds = (snapshotRow!.quantity * GB) / snapshot.sizeBytes;
  // Billed from the capture's end to the deletion, as the test's own clock brackets them.
  expect(snapshotSeconds).toBeGreaterThanOrEqual((deleteAsked - captureAnswered) / 1000 - 0.01);
  expect(snapshotSeconds).toBeLessThanOrEqual((snapshotGone - captureAsked) / 1000 + 0.01);
  // Nothing else of the snapshot is billed, and the sandbox's own snapshot dimension is its standby only (none here).
  expect([...rows.keys()].filter((key) => key.startsWith(snapshot.id))).toEqual([`${snapshot.id}/sandbox_snapshot_storage_gbs`]);
  expect(rows.has(`${largeId}/sandbox_snapshot_storage_gbs`)).toBe(false);

  // The metrics API says the same, grouped by instance and dimension.
  const hour = 3_600_000;
  const window = { startTime: new Date(Math.floor(captureAsked / hour) * hour).toISOString(), endTime: new Date((Math.floor(Date.now() / hour) + 1) * hour).toISOString() };
  const query = new URLSearchParams({ ...window, groupBy: 'resource_uuid,billing_dimension', resourceUuid: snapshot.id });
  const metrics = await t.app.inject({ method: 'GET', url: `/v0/accounts/${tenant.accountId}/metrics?${query}`, headers: { authorization: `Bearer ${tenant.admin.apiKey}` } });
  expect(metrics.statusCode).toBe(200);
  const [entry] = metrics.json().data;
  expect(entry).toMatchObject({ resourceUuid: snapshot.id, billingDimension: 'sandbox_snapshot_storage_gbs' });
  expect(entry.summary.usage.gbs).toBeCloseTo(snapshotRow!.quantity, 6);
});
