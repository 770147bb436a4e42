import fs from 'node:fs';
import path from 'node:path';
import { TERMINAL_EXECUTION_STATUSES } from '../../../domain/jobs/execution';
import { deployJobCode } from '../jobs/helpers';
import { nodeTaskQueue } from '../../../domain/config';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { inProcessNode, removeInProcessNode, type InProcessNode } from '../../helpers/in-process-nodes';
import { nodeWorkerProcess, type NodeWorkerProcess } from '../../helpers/node-worker-process';
import { buildTestImage, pushTestImage, startRegistry, type TestRegistry } from '../../helpers/oci-registry';
import { startSlowProxy } from '../../helpers/slow-proxy';
import { eventually, startControlWorker, startNodeWorker, type RunningWorker } from '../../helpers/workers';

/**
 * A job execution waits for its image through the workspace's image-pull workflow, which runs on
 * the execution's node: when that node dies mid-pull (its worker SIGKILLed, its heartbeat gone)
 * and turns LOST, the execution moves to another node and pulls there, then its task runs. The
 * registry is reached through a relay that passes 1 MB/s and holds the pull under way until the
 * node is killed.
 */
jest.setTimeout(240_000);

let t: TestApp;
let tenant: TestTenant;
let control: RunningWorker;
let registry: TestRegistry;
let slow: Awaited<ReturnType<typeof startSlowProxy>>;
let scratch: string;
let child: NodeWorkerProcess | undefined;
const nodes: Record<'a' | 'b', InProcessNode> = {} as Record<'a' | 'b', InProcessNode>;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('jobloss'), nodeLostSeconds: 12 });
  tenant = await createTenant(t.app.pg, 'jobloss');
  control = await startControlWorker(t.config, t.app.pg);
  scratch = fs.mkdtempSync(path.join(t.config.dataDir, 'jobloss-scratch-'));
  registry = await startRegistry(path.join(scratch, 'registry'));
  slow = await startSlowProxy(registry.address, 1_000_000);
  for (const id of ['a', 'b'] as const) nodes[id] = inProcessNode(t.config, id, `hl${id}-`);
}, 120_000);

afterAll(async () => {
  child?.kill();
  for (const node of Object.values(nodes)) await removeInProcessNode(node);
  await slow?.close();
  await registry?.close();
  await control?.stop();
  await t?.close();
}, 60_000);

const api = (method: 'GET' | 'POST', url: string, payload?: object) => t.call(tenant.admin.apiKey, { method, url, payload, workspace: tenant.workspace });

test('the node of a job\'s pull LOST mid-pull: the execution moves to another node, pulls there and runs its task', async () => {
  buildTestImage(path.join(scratch, 'layout'), 'moving', { files: { '/marker.txt': 'moved with its pull\n' }, randomFiles: { '/data/noise': 6_000_000 }, env: ['PATH=/bin'] });
  const image = `${slow.address}/${unique('test/moving')}:1`;
  pushTestImage(path.join(scratch, 'layout'), 'moving', image.replace(slow.address, registry.address));
  const job = unique('job');
  expect((await api('POST', '/v0/jobs', { metadata: { name: job }, spec: { runtime: { image, command: ['sh', '/app/task.sh'], memory: 128 } } })).statusCode).toBe(200);
  const { rows } = await t.app.pg.query<{ id: string }>(`SELECT id FROM resources WHERE workspace_id = $1 AND kind = 'jobs' AND name = $2`, [tenant.workspaceId, job]);
  await deployJobCode(t.app.pg, t.config.dataDir, rows[0].id, { 'task.sh': "grep -q 'moved with its pull' /marker.txt\n" });

  // Node a alone: the execution goes there, and its pull begins there.
  child = nodeWorkerProcess(nodes.a.config, scratch);
  await eventually('node a to report', async () => ((await t.app.pg.query('SELECT 1 FROM nodes WHERE id = $1', ['a'])).rowCount ? true : undefined), 60_000);
  const started = await api('POST', `/${tenant.workspace}/jobs/${job}/executions`, { tasks: [{}], id: 'moving' });
  expect(started.statusCode).toBe(200);
  const pullingOn = async (nodeId: string) => {
    const { rows: images } = await t.app.pg.query<{ progress: { bytesDone: number } | null }>('SELECT progress FROM registry_images WHERE workspace_id = $1 AND reference = $2 AND node_queue = $3', [tenant.workspaceId, image, nodeTaskQueue({ taskQueue: t.config.taskQueue, nodeId })]);
    return (images[0]?.progress?.bytesDone ?? 0) > 0 ? true : undefined;
  };
  await eventually('the pull under way on node a', () => pullingOn('a'), 60_000).catch((err: Error) => {
    throw new Error(`${err.message}; node a's output:\n${child!.output().slice(-3000)}`);
  });
  slow.hold();

  // Node b comes; node a dies with its pull, and stays dead.
  nodes.b.worker = await startNodeWorker(nodes.b.config, nodes.b.runtime, { pg: t.app.pg });
  child.kill();
  slow.release();

  const done = await eventually('the execution to end', async () => {
    const body = (await api('GET', `/${tenant.workspace}/jobs/${job}/executions/moving`)).json();
    return TERMINAL_EXECUTION_STATUSES.includes(body.status) ? body : undefined;
  }, 150_000);
  expect(done.status).toBe('succeeded');
  const placed = await t.app.pg.query<{ node_id: string }>('SELECT node_id FROM job_executions WHERE execution_id = $1 AND job_name = $2', ['moving', job]);
  expect(placed.rows[0].node_id).toBe('b');
  // Pulled on b, by a pull workflow of b's own.
  expect(await pullingOn('b')).toBe(true);
  expect(await nodes.b.runtime.findImage(image)).toEqual(expect.objectContaining({ digest: expect.stringMatching(/^sha256:/) }));
  const events: string[] = (await api('GET', `/v0/jobs/${job}`)).json().events.map((event: { message: string }) => event.message);
  expect(events.filter((message) => message === `waiting for its image: pulling '${image}' onto the node`)).toHaveLength(2);
  expect(events).toContain(`image '${image}' pulled (${(await nodes.b.runtime.findImage(image))!.digest})`);
});
