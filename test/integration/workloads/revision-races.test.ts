import fc from 'fast-check';
import { networkChanged } from '../../../domain/sandbox/spec-rules';
import type { WorkloadSpec } from '../../../domain/workloads/workload';
import { RevisionStore } from '../../../store/revisions';
import { createTenant, startTestApp, unique, type TestApp } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';

/**
 * Updates of a workload's `spec.network` racing each other and code uploads, in generated
 * schedules against PostgreSQL: whatever the order, the latest revision ends with the spec the
 * resource ends with. (An update commits its row, then asks for a revision as the API's hook
 * does; an upload numbers its revision with the spec as it is then.)
 */
jest.setTimeout(120_000);

let t: TestApp;
let revisions: RevisionStore;
let resourceId: string;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('revision-races') });
  const tenant = await createTenant(t.app.pg, 'revision-races');
  const resources = tenantResources(t, tenant);
  expect((await resources.api('POST', '/v0/agents', { metadata: { name: 'racer' }, spec: {} })).statusCode).toBe(200);
  resourceId = await resources.idOf('agents', 'racer');
  revisions = new RevisionStore(t.app.pg);
});

afterAll(() => t?.close());

type Step = { kind: 'update'; host: number; pauseMs: number } | { kind: 'upload'; bundle: number; pauseMs: number };

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const specWith = (host: number): WorkloadSpec => ({ runtime: { memory: 256 }, network: { allowedDomains: [`h${host}.test`] } });

async function run(step: Step): Promise<void> {
  await pause(step.pauseMs);
  if (step.kind === 'upload') {
    await revisions.create({ resourceId, bundleSha256: `bundle-${step.bundle}`, bundleBytes: 1, actor: 'test' });
    return;
  }
  await t.app.pg.query('UPDATE resources SET spec = $2 WHERE id = $1', [resourceId, JSON.stringify(specWith(step.host))]);
  // The hook runs after the update's response: other steps may come between.
  await pause(step.pauseMs);
  await revisions.createFromLatestBundle(resourceId, 'test', (latest, current) => networkChanged(latest.spec, current));
}

const step = fc.oneof(
  fc.record({ kind: fc.constant('update' as const), host: fc.integer({ min: 1, max: 3 }), pauseMs: fc.integer({ min: 0, max: 4 }) }),
  fc.record({ kind: fc.constant('upload' as const), bundle: fc.integer({ min: 1, max: 3 }), pauseMs: fc.integer({ min: 0, max: 4 }) }),
);

test('the latest revision ends with the spec.network the workload ends with, in any order of updates and uploads', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 2, maxLength: 6 }), async (steps) => {
      await t.app.pg.query('UPDATE resources SET spec = $2 WHERE id = $1', [resourceId, JSON.stringify(specWith(0))]);
      await revisions.create({ resourceId, bundleSha256: 'bundle-0', bundleBytes: 1, actor: 'test' });
      await Promise.all(steps.map(run));
      const latest = await revisions.latest(resourceId);
      const { rows } = await t.app.pg.query<{ spec: WorkloadSpec }>('SELECT spec FROM resources WHERE id = $1', [resourceId]);
      expect(latest?.spec.network).toEqual(rows[0].spec.network);
    }),
    { numRuns: 40 },
  );
});

test('no revision is added when the network is unchanged, nor for a workload without a bundle to reuse', async () => {
  await t.app.pg.query('UPDATE resources SET spec = $2 WHERE id = $1', [resourceId, JSON.stringify(specWith(7))]);
  const added = await revisions.create({ resourceId, bundleSha256: 'bundle-7', bundleBytes: 1, actor: 'test' });
  expect((await revisions.get(resourceId, added))?.spec).toEqual(specWith(7));
  expect(await revisions.createFromLatestBundle(resourceId, 'test', (latest, current) => networkChanged(latest.spec, current))).toBeUndefined();
  await revisions.create({ resourceId, bundleSha256: null, bundleBytes: null, spec: specWith(7), actor: 'test' });
  await t.app.pg.query('UPDATE resources SET spec = $2 WHERE id = $1', [resourceId, JSON.stringify(specWith(8))]);
  expect(await revisions.createFromLatestBundle(resourceId, 'test', () => true)).toBeUndefined();
});
