import fc from 'fast-check';
import { createResourcePlacementActivities } from '../../../activities/resource-placement';
import { nodeTaskQueue } from '../../../domain/config';
import type { NodeReport } from '../../../domain/nodes/node';
import { recordHeartbeat } from '../../../store/nodes';
import { ResourceStore } from '../../../store/resources';
import { RevisionStore } from '../../../store/revisions';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';

/**
 * Placement of sandboxes and volumes against the real database, with generated interleavings:
 * attempts of the placement activity (a retry, or a duplicate delivery) racing each other and
 * heartbeats that change which node is the roomier. Every attempt must answer the one node
 * recorded on the resource's row, whatever the order; a volume's sandbox follows the volume. A
 * workload revision likewise, and its move off a LOST node happens once however many attempts race.
 */
jest.setTimeout(120_000);

const GiB = 1024 ** 3;
// Node ids are the platform's (a drain outlives the test run): each run has its own.
const NODES = ['n1', 'n2', 'n3'].map((id) => unique(id));
const [N1] = NODES;
const EU1 = unique('eu1');
let t: TestApp;
let tenant: TestTenant;
let store: ResourceStore;
let placement: ReturnType<typeof createResourcePlacementActivities>;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('races') });
  tenant = await createTenant(t.app.pg, 'races');
  store = new ResourceStore(t.app.pg);
  placement = createResourcePlacementActivities({ pg: t.app.pg, config: t.config });
  for (const id of NODES) await beat(id, 0);
});

afterAll(async () => {
  await t?.close();
});

/** Node `id` (of `region`) reports `committedGiB` of its 16 GiB taken. */
async function beat(id: string, committedGiB: number, region = 'test'): Promise<void> {
  const report: NodeReport = {
    id,
    taskQueue: nodeTaskQueue({ taskQueue: t.config.taskQueue, nodeId: id }),
    region,
    labels: {},
    capacity: { memoryBytes: 16 * GiB, cpus: 2, diskBytes: 100 * GiB },
    load: { sandboxes: committedGiB, memoryCommittedBytes: committedGiB * GiB, diskFreeBytes: 50 * GiB },
    startedAt: new Date(),
  };
  await recordHeartbeat(t.app.pg, report);
}

async function newResource(kind: 'sandboxes' | 'volumes' | 'agents'): Promise<string> {
  const row = await store.create({ workspaceId: tenant.workspaceId, kind, name: unique(kind.slice(0, 3)) }, { displayName: '', labels: {}, spec: {} }, 'DEPLOYING', 'test', 'test');
  return row!.id;
}

/** One step of a schedule: an attempt of the activity, or a heartbeat, after a delay of 0-3 ms. */
const stepArb = fc.oneof(
  fc.record({ kind: fc.constant('attempt' as const), delayMs: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ kind: fc.constant('beat' as const), delayMs: fc.integer({ min: 0, max: 3 }), node: fc.constantFrom(...NODES), committedGiB: fc.integer({ min: 0, max: 15 }) }),
);
const scheduleArb = fc.array(stepArb, { minLength: 2, maxLength: 12 }).filter((steps) => steps.some((step) => step.kind === 'attempt'));

const after = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('racing attempts of a placement answer one node, the one recorded, whatever the heartbeats do meanwhile', async () => {
  await fc.assert(
    fc.asyncProperty(scheduleArb, fc.constantFrom('sandboxes' as const, 'volumes' as const), async (schedule, kind) => {
      const id = await newResource(kind);
      const place = () => (kind === 'volumes' ? placement.placeVolume(id) : placement.placeSandbox({ resourceId: id, volumes: [], legacyQueue: 'none' }));
      const answers = await Promise.all(
        schedule.map(async (step) => {
          await after(step.delayMs);
          if (step.kind === 'beat') return beat(step.node, step.committedGiB).then(() => undefined);
          return (await place()).nodeId;
        }),
      );
      const placed = (await t.app.pg.query<{ node_id: string }>('SELECT node_id FROM resources WHERE id = $1', [id])).rows[0].node_id;
      expect(NODES).toContain(placed);
      for (const answer of answers.filter((answer) => answer !== undefined)) expect(answer).toBe(placed);
      // A retry later, with another node the roomier by far, still answers the same.
      for (const node of NODES) await beat(node, node === placed ? 15 : 0);
      expect((await place()).nodeId).toBe(placed);
      for (const node of NODES) await beat(node, 0);
    }),
    { numRuns: Number(process.env.HANGAR_INTERLEAVING_RUNS || 60), seed: process.env.HANGAR_INTERLEAVING_SEED ? Number(process.env.HANGAR_INTERLEAVING_SEED) : undefined },
  );
});

test('racing placements of a revision answer one node; racing moves off its LOST node move it once, to a READY node', async () => {
  const revisions = new RevisionStore(t.app.pg);
  await fc.assert(
    fc.asyncProperty(scheduleArb, scheduleArb, async (placing, moving) => {
      const id = await newResource('agents');
      const revision = await revisions.create({ resourceId: id, bundleSha256: null, bundleBytes: null, spec: {}, actor: null });
      const run = (schedule: typeof placing, attempt: () => Promise<string>, skipNode?: string) =>
        Promise.all(
          schedule.map(async (step) => {
            await after(step.delayMs);
            // A lost node does not report during the moves (its coming back is another story).
            if (step.kind === 'beat') return step.node === skipNode ? undefined : beat(step.node, step.committedGiB).then(() => undefined);
            return attempt();
          }),
        );
      const recorded = async () => (await t.app.pg.query<{ node_id: string }>('SELECT node_id FROM workload_revisions WHERE resource_id = $1 AND revision = $2', [id, revision])).rows[0].node_id;
      const placedAnswers = await run(placing, async () => (await placement.placeRevision({ resourceId: id, revision })).nodeId);
      const placed = await recorded();
      expect(NODES).toContain(placed);
      for (const answer of placedAnswers.filter((answer) => answer !== undefined)) expect(answer).toBe(placed);

      // Its node goes LOST: every attempt at the move answers the one node it moved to.
      await t.app.pg.query(`UPDATE nodes SET heartbeat_at = now() - interval '1 hour' WHERE id = $1`, [placed]);
      const movedAnswers = await run(moving, async () => (await placement.moveRevision({ resourceId: id, revision, fromNodeId: placed })).nodeId, placed);
      const moved = await recorded();
      expect(NODES.filter((node) => node !== placed)).toContain(moved);
      for (const answer of movedAnswers.filter((answer) => answer !== undefined)) expect(answer).toBe(moved);
      // Back (READY), the old node is not moved to again by a late attempt: the revision stays.
      await beat(placed, 0);
      expect((await placement.moveRevision({ resourceId: id, revision, fromNodeId: placed })).nodeId).toBe(moved);
      for (const node of NODES) await beat(node, 0);
    }),
    { numRuns: Number(process.env.HANGAR_INTERLEAVING_RUNS || 40), seed: process.env.HANGAR_INTERLEAVING_SEED ? Number(process.env.HANGAR_INTERLEAVING_SEED) : undefined },
  );
});

test('a sandbox goes where its volume is; volumes on two nodes, or on a node not READY, are refused for good, saying why', async () => {
  await beat(N1, 15);
  const volumeA = await newResource('volumes');
  expect((await placement.placeVolume(volumeA)).nodeId).not.toBe(N1);
  const volumeNode = (await placement.placeVolume(volumeA)).nodeId;
  await beat(volumeNode, 15);
  await beat(N1, 0);
  const sandbox = await newResource('sandboxes');
  const placed = await placement.placeSandbox({ resourceId: sandbox, volumes: [{ name: 'a', volumeId: volumeA }], legacyQueue: 'none' });
  expect(placed.nodeId).toBe(volumeNode);

  // Two volumes on two nodes: no node has both.
  const volumeB = await newResource('volumes');
  await t.app.pg.query('UPDATE resources SET node_id = $2 WHERE id = $1', [volumeB, NODES.find((node) => node !== volumeNode)]);
  const torn = placement.placeSandbox({ resourceId: await newResource('sandboxes'), volumes: [{ name: 'a', volumeId: volumeA }, { name: 'b', volumeId: volumeB }], legacyQueue: 'none' });
  await expect(torn).rejects.toMatchObject({ type: 'VolumesOnTwoNodes', nonRetryable: true });

  // A volume on a node that is not registered (or not READY): refused, saying which and why.
  await t.app.pg.query(`UPDATE resources SET node_id = 'gone' WHERE id = $1`, [volumeB]);
  const stranded = placement.placeSandbox({ resourceId: await newResource('sandboxes'), volumes: [{ name: 'b', volumeId: volumeB }], legacyQueue: 'none' });
  await expect(stranded).rejects.toMatchObject({ type: 'NodeNotReady', message: "volume 'b' is on node 'gone', which is not registered" });
  for (const node of NODES) await beat(node, 0);
});

test("a sandbox of a region goes to that region's nodes, however full; a region no node has only names its URL", async () => {
  await beat(EU1, 14, 'eu');
  const placeIn = async (region: string) => (await placement.placeSandbox({ resourceId: await newResource('sandboxes'), region, volumes: [], legacyQueue: 'none' })).nodeId;
  expect(await placeIn('eu')).toBe(EU1);
  expect(NODES).toContain(await placeIn('us-pdx-1'));
  // Drained, the region's only node takes nothing: the sandbox waits (the activity retries).
  await t.app.pg.query('UPDATE nodes SET drained_at = now() WHERE id = $1', [EU1]);
  await expect(placeIn('eu')).rejects.toMatchObject({ type: 'NoNodeAvailable', nonRetryable: false, message: expect.stringContaining("of region 'eu'") });
});

test('a burst of creates between two heartbeats spreads over the nodes: sandboxes placed since a report count against its memory', async () => {
  const sizesArb = fc.array(fc.constantFrom(512, 1024, 2048, 4096), { minLength: 2, maxLength: 9 });
  await fc.assert(
    fc.asyncProperty(sizesArb, async (sizesMb) => {
      // Nodes of their own (a platform of their own: another control queue), all reporting nothing taken.
      const config = { ...t.config, taskQueue: unique('burst') };
      const nodes = ['b1', 'b2', 'b3'].map((id) => unique(id));
      for (const id of nodes) {
        const taskQueue = nodeTaskQueue({ taskQueue: config.taskQueue, nodeId: id });
        await recordHeartbeat(t.app.pg, { id, taskQueue, region: 'test', labels: {}, capacity: { memoryBytes: 16 * GiB, cpus: 2, diskBytes: 100 * GiB }, load: { sandboxes: 0, memoryCommittedBytes: 0, diskFreeBytes: 50 * GiB }, startedAt: new Date() });
      }
      const burst = createResourcePlacementActivities({ pg: t.app.pg, config });
      const placedMb = new Map(nodes.map((id) => [id, 0]));
      for (const memory of sizesMb) {
        const row = await store.create({ workspaceId: tenant.workspaceId, kind: 'sandboxes', name: unique('sbx') }, { displayName: '', labels: {}, spec: { runtime: { memory } } }, 'DEPLOYING', 'test', 'test');
        const { nodeId } = await burst.placeSandbox({ resourceId: row!.id, volumes: [], legacyQueue: 'none' });
        placedMb.set(nodeId, placedMb.get(nodeId)! + memory);
      }
      // Each went to the node with the least placed so far: no node is ahead of another by more than one sandbox's memory.
      const loads = [...placedMb.values()];
      expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(Math.max(...sizesMb));
    }),
    { numRuns: 15 },
  );
});
