import fs from 'node:fs';
import path from 'node:path';
import { TERMINAL_EXECUTION_STATUSES, jobSandboxId } from '../../../domain/jobs/execution';
import { setNodeDrained } from '../../../store/nodes';
import { deployJobCode } from '../jobs/helpers';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { sandboxSpec } from '../../helpers/sandbox-runtime';
import { inProcessNode, removeInProcessNode, type InProcessNode } from '../../helpers/in-process-nodes';
import { eventually, startControlWorker, startNodeWorker, type RunningWorker } from '../../helpers/workers';

/**
 * Two runtime nodes of one platform, each with its own data folder, runtime and worker (in this
 * process), both reporting to the same PostgreSQL and polling the same Temporal: job executions
 * go to the node with more free memory, never to a drained one; when the node running one is
 * killed (its worker, its heartbeat, its sandboxes' processes), the execution waits while the
 * node is UNREACHABLE and finishes on the other once it is LOST, every task succeeding exactly
 * once; the node, back, removes the sandbox of the execution that moved away.
 */
jest.setTimeout(240_000);

// Every task leaves a start and, when it succeeds, an end file in /out/<run>/ (a host folder of both nodes).
const TASK = `
const fs = require('fs');
const index = Number(process.env.TASK_INDEX);
const args = JSON.parse(process.env.TASK_ARGUMENTS);
const dir = '/out/' + args.run;
fs.mkdirSync(dir, { recursive: true });
const tag = index + '-' + process.pid;
fs.writeFileSync(dir + '/start-' + tag, '');
setTimeout(() => { fs.writeFileSync(dir + '/end-' + tag, ''); }, args.sleepMs || 0);
`;

let t: TestApp;
let tenant: TestTenant;
let control: RunningWorker;
let outDir: string;
let job: string;
const nodes: Record<'a' | 'b', InProcessNode> = {} as Record<'a' | 'b', InProcessNode>;

async function startNode(node: InProcessNode): Promise<void> {
  node.worker = await startNodeWorker(node.config, node.runtime, { pg: t.app.pg, jobMounts: [{ hostPath: outDir, mountPath: '/out', readOnly: false }] });
}

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('placement'), nodeLostSeconds: 12 });
  tenant = await createTenant(t.app.pg, 'placement');
  outDir = fs.mkdtempSync(path.join(t.config.dataDir, 'placement-out-'));
  fs.chmodSync(outDir, 0o777);
  control = await startControlWorker(t.config, t.app.pg);
  for (const id of ['a', 'b'] as const) {
    nodes[id] = inProcessNode(t.config, id, `hn${id}-`);
    await startNode(nodes[id]);
  }
  job = unique('job');
  const created = await api('POST', '/v0/jobs', { metadata: { name: job }, spec: { runtime: { command: ['node', 'task.js'], memory: 128, maxConcurrentTasks: 2 } } });
  expect(created.statusCode).toBe(200);
  const row = await t.app.pg.query<{ id: string }>(`SELECT id FROM resources WHERE workspace_id = $1 AND kind = 'jobs' AND name = $2`, [tenant.workspaceId, job]);
  await deployJobCode(t.app.pg, t.config.dataDir, row.rows[0].id, { 'task.js': TASK });
}, 120_000);

afterAll(async () => {
  for (const node of Object.values(nodes)) await removeInProcessNode(node);
  await control?.stop();
  await t?.close();
});

const api = (method: 'GET' | 'POST', url: string, payload?: object) => t.call(tenant.admin.apiKey, { method, url, payload, workspace: tenant.workspace });

/** Starts an execution of `tasks` tasks; answers its row id. */
async function execute(tasks: object[]): Promise<{ rowId: string; executionId: string }> {
  const res = await api('POST', `/${tenant.workspace}/jobs/${job}/executions`, { tasks });
  expect(res.statusCode).toBe(200);
  const executionId: string = res.json().id;
  const { rows } = await t.app.pg.query<{ id: string }>('SELECT id FROM job_executions WHERE execution_id = $1 AND job_name = $2', [executionId, job]);
  return { rowId: rows[0].id, executionId };
}

async function finished(executionId: string, timeoutMs = 90_000) {
  return eventually(`execution ${executionId} to end`, async () => {
    const body = (await api('GET', `/${tenant.workspace}/jobs/${job}/executions/${executionId}`)).json();
    return TERMINAL_EXECUTION_STATUSES.includes(body.status) ? body : undefined;
  }, timeoutMs);
}

async function placedOn(rowId: string): Promise<string | null> {
  return (await t.app.pg.query<{ node_id: string | null }>('SELECT node_id FROM job_executions WHERE id = $1', [rowId])).rows[0].node_id;
}

/** Waits for the node `id` to report at least `sandboxes` sandboxes (its heartbeat comes every 2 s). */
async function reported(id: string, sandboxes: number): Promise<void> {
  await eventually(`node ${id} to report ${sandboxes} sandboxes`, async () => {
    const { rows } = await t.app.pg.query<{ sandboxes: number }>('SELECT sandboxes FROM nodes WHERE id = $1', [id]);
    return rows[0]?.sandboxes >= sandboxes ? true : undefined;
  });
}

const taskOf = (file: string) => file.split('-')[1];
const files = (run: string, kind: 'start' | 'end') => (fs.existsSync(path.join(outDir, run)) ? fs.readdirSync(path.join(outDir, run)).filter((name) => name.startsWith(`${kind}-`)) : []);

test('an execution goes to the node with more free memory, and never to a drained one', async () => {
  // A sandbox whose 4 GiB limit node a commits: node b has more free memory.
  const heavy = sandboxSpec({ memoryMb: 4096 });
  await nodes.a.runtime.start(heavy);
  await reported('a', 1);
  const first = await execute([{ run: unique('p1') }]);
  expect((await finished(first.executionId)).status).toBe('succeeded');
  expect(await placedOn(first.rowId)).toBe('b');

  await setNodeDrained(t.app.pg, 'b', true);
  const second = await execute([{ run: unique('p2') }]);
  expect((await finished(second.executionId)).status).toBe('succeeded');
  expect(await placedOn(second.rowId)).toBe('a');
  await setNodeDrained(t.app.pg, 'b', false);
  await nodes.a.runtime.remove(heavy.id);
});

test('a node killed mid-execution: the execution finishes on the other, each task succeeding once; the node, back, removes what moved away', async () => {
  await nodes.a.runtime.start(sandboxSpec({ id: unique('heavy'), memoryMb: 4096 }));
  await reported('a', 1);
  const run = unique('loss');
  const execution = await execute(Array.from({ length: 8 }, () => ({ run, sleepMs: 1_500 })));
  const succeeded = async () => {
    const tasks: { status: string }[] = (await api('GET', `/${tenant.workspace}/jobs/${job}/executions/${execution.executionId}/tasks`)).json();
    return tasks.flatMap((task, index) => (task.status === 'succeeded' ? [String(index)] : []));
  };
  await eventually('two tasks recorded done on node b', async () => ((await succeeded()).length >= 2 ? true : undefined), 60_000);
  expect(await placedOn(execution.rowId)).toBe('b');

  // Node b dies: the processes of its sandboxes are killed, its worker and heartbeat stop; its
  // records stay on disk, as after a crash. (A node only cut off, its processes running on, could
  // finish a task whose success it can no longer record: that task runs again where the execution
  // moved. The README says so.) So may a task killed between writing its end file and its exit
  // being recorded, as any work cut off before it reported; a success recorded never runs again.
  const recordedBeforeKill = await succeeded();
  // A process listed may end before its kill (the launcher's short-lived steps): it is gone either way.
  for (const pid of await nodes.b.runtime.pids(jobSandboxId(execution.rowId))) killIfAlive(pid);
  const stopping = nodes.b.worker!.stop();
  nodes.b.worker = undefined;
  await stopping;

  const done = await finished(execution.executionId, 150_000);
  expect(done.status).toBe('succeeded');
  expect(await placedOn(execution.rowId)).toBe('a');
  // Every task ended; one whose success was recorded before the kill never ran again.
  const ends = files(run, 'end').map(taskOf);
  expect([...new Set(ends)].sort()).toEqual(['0', '1', '2', '3', '4', '5', '6', '7']);
  expect(recordedBeforeKill.length).toBeGreaterThanOrEqual(2);
  for (const task of recordedBeforeKill) expect(ends.filter((ended) => ended === task)).toHaveLength(1);
  expect(done.stats).toMatchObject({ total: 8, success: 8, failure: 0 });

  // Back, node b removes the sandbox of the execution that moved away before it takes work.
  expect((await nodes.b.runtime.list()).map((sandbox) => sandbox.id)).toContain(jobSandboxId(execution.rowId));
  await startNode(nodes.b);
  expect((await nodes.b.runtime.list()).map((sandbox) => sandbox.id)).not.toContain(jobSandboxId(execution.rowId));
  expect(files(run, 'end')).toHaveLength(ends.length);
});

function killIfAlive(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}
