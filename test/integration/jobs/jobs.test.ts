import fs from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import { recordUsage } from '../../../activities/usage-metering';
import { TERMINAL_EXECUTION_STATUSES, jobExecutionWorkflowId, jobSandboxId, jobUsageTick } from '../../../domain/jobs/execution';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { testRuntime } from '../../helpers/sandbox-runtime';
import { eventually, startControlWorker, startNodeWorker, type RunningWorker } from '../../helpers/workers';
import { deployJobCode, maxOverlap } from './helpers';
import { repoRoot } from '../../../scripts/stack/binaries';

// Every task leaves files in /out/<run>/ (a host folder bound into the job sandboxes), so the
// tests see what ran, when, and how often, from the outside.
const TASK = `
const fs = require('fs');
const index = Number(process.env.TASK_INDEX);
const args = JSON.parse(process.env.TASK_ARGUMENTS);
const dir = '/out/' + args.run;
fs.mkdirSync(dir, { recursive: true });
const start = Date.now();
const tag = index + '-' + process.pid + '-' + Math.random().toString(16).slice(2);
fs.writeFileSync(dir + '/start-' + tag, JSON.stringify({ index, start, name: process.env.NAME || null, cwd: process.cwd() }));
setTimeout(() => {
  fs.writeFileSync(dir + '/end-' + tag, JSON.stringify({ index, start, end: Date.now() }));
  process.exit(args.exit || 0);
}, args.sleepMs || 0);
`;

let t: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let control: RunningWorker;
let node: RunningWorker | undefined;
let runtime: ReturnType<typeof testRuntime>;
let outDir: string;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('jobs') });
  tenant = await createTenant(t.app.pg, 'jobs');
  other = await createTenant(t.app.pg, 'jobs-other');
  runtime = testRuntime(t.config.dataDir);
  outDir = fs.mkdtempSync(path.join(t.config.dataDir, 'job-out-'));
  fs.chmodSync(outDir, 0o777);
  control = await startControlWorker(t.config, t.app.pg);
  node = await startNodeWorker(t.config, runtime, { pg: t.app.pg, jobMounts: [{ hostPath: outDir, mountPath: '/out', readOnly: false }] });
}, 60_000);

afterAll(async () => {
  for (const sandbox of await runtime.list()) if (sandbox.id.startsWith('job-')) await runtime.remove(sandbox.id).catch(() => undefined);
  await node?.stop();
  await control.stop();
  await t.close();
});

const api = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object, key = tenant.admin.apiKey) =>
  t.call(key, { method, url, payload, workspace: tenant.workspace });

/** A job with code deployed, with the given spec.runtime. */
async function createJob(runtimeSpec: Record<string, unknown>): Promise<string> {
  const name = unique('job');
  const created = await api('POST', '/v0/jobs', { metadata: { name }, spec: { runtime: { command: ['node', 'task.js'], memory: 256, ...runtimeSpec } } });
  expect(created.statusCode).toBe(200);
  const row = await t.app.pg.query<{ id: string }>(`SELECT id FROM resources WHERE workspace_id = $1 AND kind = 'jobs' AND name = $2`, [tenant.workspaceId, name]);
  await deployJobCode(t.app.pg, t.config.dataDir, row.rows[0].id, { 'task.js': TASK });
  return name;
}

const executionsUrl = (job: string) => `/${tenant.workspace}/jobs/${job}/executions`;

async function finished(job: string, id: string, timeoutMs = 60_000) {
  return eventually(
    `execution ${id} to end`,
    async () => {
      const body = (await api('GET', `${executionsUrl(job)}/${id}`)).json();
      return TERMINAL_EXECUTION_STATUSES.includes(body.status) ? body : undefined;
    },
    timeoutMs,
  );
}

function runFiles(run: string, kind: 'start' | 'end') {
  const dir = path.join(outDir, run);
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.startsWith(`${kind}-`))
    .map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')));
}

test('runs every task once with its index and arguments, never more than maxConcurrentTasks at a time', async () => {
  const job = await createJob({ maxConcurrentTasks: 3 });
  const run = unique('conc');
  const tasks = Array.from({ length: 8 }, (_, i) => ({ run, sleepMs: 300, name: `n${i}` }));
  const res = await api('POST', executionsUrl(job), { tasks, id: 'first' });
  expect(res.statusCode).toBe(200);
  expect(res.json()).toEqual(expect.objectContaining({ id: 'first', executionId: 'first', workspaceId: tenant.workspaceId, status: 'queued', tasks }));
  expect(res.json().jobId).toMatch(/^[0-9a-f-]{36}$/);

  const done = await finished(job, 'first');
  expect(done.status).toBe('succeeded');
  expect(done.stats).toEqual({ total: 8, success: 8, failure: 0, running: 0, retried: 0, cancelled: 0 });

  const ends = runFiles(run, 'end');
  expect(ends.map((e) => e.index).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  const overlap = maxOverlap(ends.map((e) => [e.start, e.end]));
  expect(overlap).toBeLessThanOrEqual(3);
  expect(overlap).toBeGreaterThanOrEqual(2);
  const starts = runFiles(run, 'start');
  expect(starts.find((s) => s.index === 5)).toEqual(expect.objectContaining({ name: 'n5', cwd: '/app' }));

  const taskList = (await api('GET', `${executionsUrl(job)}/first/tasks`)).json();
  expect(taskList).toHaveLength(8);
  expect(taskList[0]).toEqual(
    expect.objectContaining({ status: 'succeeded', spec: expect.objectContaining({ maxRetries: 0, timeout: 3600 }), conditions: [expect.objectContaining({ type: 'Succeeded' })] }),
  );
  expect(taskList[0].metadata).toEqual(expect.objectContaining({ name: 'task-0', startedAt: expect.any(String), completedAt: expect.any(String) }));

  const list = (await api('GET', executionsUrl(job))).json();
  expect(list.map((e: { id: string }) => e.id)).toEqual(['first']);

  // The execution's workflow is findable by its business key and search attributes; its sandbox is gone.
  const desc = await t.app.temporal.workflow.getHandle(jobExecutionWorkflowId(tenant.workspace, job, 'first')).describe();
  expect(desc.searchAttributes).toEqual(expect.objectContaining({ HangarWorkspace: [tenant.workspace], HangarResourceKind: ['job'], HangarResourceName: [job] }));
  const row = await t.app.pg.query<{ id: string; created_at: Date }>('SELECT id, created_at FROM job_executions WHERE execution_id = $1 AND job_name = $2', ['first', job]);
  expect(await runtime.status(jobSandboxId(row.rows[0].id))).toBeUndefined();

  // Metered once: memory GB x task seconds under the execution's id, so the same tick again is a duplicate.
  const seconds = await t.app.pg.query<{ s: number }>('SELECT sum(seconds) AS s FROM job_tasks WHERE execution_id = $1', [row.rows[0].id]);
  expect(Number(seconds.rows[0].s)).toBeGreaterThan(8 * 0.3 - 0.01);
  const key = { id: row.rows[0].id, executionId: 'first', accountId: tenant.accountId, workspace: tenant.workspace, workspaceId: tenant.workspaceId, jobId: res.json().jobId, jobName: job };
  const tick = jobUsageTick(key, 256, Number(seconds.rows[0].s), row.rows[0].created_at.getTime());
  expect(await recordUsage(t.app.pg, tick!)).toEqual({ accepted: 0, duplicates: 1 });

  const again = await api('POST', executionsUrl(job), { tasks, id: 'first' });
  expect(again.statusCode).toBe(409);
}, 90_000);

test('a failing task is retried maxRetries times, then fails the execution', async () => {
  const job = await createJob({ maxRetries: 2 });
  const run = unique('retry');
  const res = await api('POST', executionsUrl(job), { tasks: [{ run: `${run}-ok` }, { run, exit: 3 }] });
  expect(res.statusCode).toBe(200);
  const done = await finished(job, res.json().id);
  expect(done.status).toBe('failed');
  expect(done.stats).toEqual({ total: 2, success: 1, failure: 1, running: 0, retried: 1, cancelled: 0 });
  expect(runFiles(run, 'start')).toHaveLength(3);
  const tasks = (await api('GET', `${executionsUrl(job)}/${res.json().id}/tasks`)).json();
  expect(tasks[1].status).toBe('failed');
  expect(tasks[1].retries).toBe(2);
  expect(tasks[1].conditions.map((c: { reason: string }) => c.reason)).toEqual(['NonZeroExit', 'NonZeroExit', 'NonZeroExit']);
  expect(tasks[1].conditions[0].message).toContain('exited with code 3');
}, 90_000);

test('a task over its timeout is killed and the execution ends in timeout', async () => {
  const job = await createJob({ timeout: 1 });
  const run = unique('slow');
  const res = await api('POST', executionsUrl(job), { tasks: [{ run, sleepMs: 60_000 }] });
  const done = await finished(job, res.json().id, 30_000);
  expect(done.status).toBe('timeout');
  expect(runFiles(run, 'start')).toHaveLength(1);
  expect(runFiles(run, 'end')).toHaveLength(0);
  const tasks = (await api('GET', `${executionsUrl(job)}/${res.json().id}/tasks`)).json();
  expect(tasks[0]).toEqual(expect.objectContaining({ status: 'failed', conditions: [expect.objectContaining({ reason: 'Timeout' })] }));
}, 60_000);

test('DELETE cancels: running processes die, unstarted tasks never run', async () => {
  const job = await createJob({ maxConcurrentTasks: 2 });
  const run = unique('cancel');
  const res = await api('POST', executionsUrl(job), { tasks: [0, 1, 2, 3].map(() => ({ run, sleepMs: 60_000 })) });
  const id = res.json().id;
  await eventually('two tasks running', async () => (runFiles(run, 'start').length === 2 ? true : undefined), 30_000);
  const cancel = await api('DELETE', `${executionsUrl(job)}/${id}`);
  expect(cancel.statusCode).toBe(200);
  expect(['cancelling', 'cancelled']).toContain(cancel.json().status);
  const done = await finished(job, id, 30_000);
  expect(done.status).toBe('cancelled');
  expect(done.stats).toEqual(expect.objectContaining({ total: 4, success: 0, cancelled: 4, running: 0 }));
  const row = await t.app.pg.query<{ id: string }>('SELECT id FROM job_executions WHERE execution_id = $1 AND job_name = $2', [id, job]);
  expect(await runtime.status(jobSandboxId(row.rows[0].id))).toBeUndefined();
  expect(runFiles(run, 'start')).toHaveLength(2);
  expect(runFiles(run, 'end')).toHaveLength(0);
  const again = await api('DELETE', `${executionsUrl(job)}/${id}`);
  expect(again.json().status).toBe('cancelled');
}, 60_000);

test('a node worker stopped mid-execution resumes it without running finished tasks again', async () => {
  const job = await createJob({ maxConcurrentTasks: 2 });
  const run = unique('resume');
  const res = await api('POST', executionsUrl(job), { tasks: Array.from({ length: 6 }, () => ({ run, sleepMs: 700 })) });
  const id = res.json().id;
  await eventually('two tasks finished', async () => (runFiles(run, 'end').length >= 2 ? true : undefined), 30_000);
  await node!.stop();
  node = undefined;
  const startsWhileDown = runFiles(run, 'start').length;
  expect(startsWhileDown).toBeLessThan(6);
  node = await startNodeWorker(t.config, runtime, { pg: t.app.pg, jobMounts: [{ hostPath: outDir, mountPath: '/out', readOnly: false }] });
  const done = await finished(job, id, 60_000);
  expect(done.status).toBe('succeeded');
  // Exactly one run per task: finished ones were not repeated, interrupted ones were re-attached.
  expect(runFiles(run, 'start').map((s) => s.index).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5]);
}, 90_000);

test('auth, unknown workspace and job, bad bodies, jobs without code', async () => {
  const job = await createJob({});
  const url = executionsUrl(job);
  expect((await t.call(undefined, { method: 'GET', url })).statusCode).toBe(401);
  expect((await t.call('not-a-key', { method: 'GET', url })).statusCode).toBe(401);
  const foreign = await t.call(other.admin.apiKey, { method: 'GET', url });
  expect(foreign.statusCode).toBe(403);
  expect(foreign.json().error).toBe('access_denied');
  const noWorkspace = await api('GET', `/${unique('nowhere')}/jobs/${job}/executions`);
  expect(noWorkspace.statusCode).toBe(404);
  expect(noWorkspace.json().error).toBe('not_found');
  const noJob = await api('GET', `/${tenant.workspace}/jobs/missing/executions`);
  expect(noJob.statusCode).toBe(404);
  expect(noJob.json().message).toContain("job 'missing'");
  expect((await api('GET', `${url}/nope`)).statusCode).toBe(404);
  expect((await api('GET', `${url}/nope/tasks`)).statusCode).toBe(404);
  expect((await api('DELETE', `${url}/nope`)).statusCode).toBe(404);

  for (const [payload, field] of [
    [{}, 'tasks'],
    [{ tasks: 'x' }, 'tasks'],
    [{ tasks: [] }, 'tasks'],
    [{ tasks: [1] }, 'tasks'],
    [{ tasks: [{}], env: { 'bad-name': 'x' } }, 'env'],
    [{ tasks: [{}], memory: 1 }, 'memory'],
    [{ tasks: [{}], id: '../x' }, 'id'],
    [{ tasks: Array.from({ length: 10_001 }, () => ({})) }, 'tasks'],
  ] as const) {
    const bad = await api('POST', url, payload);
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toContain(field);
    expect(bad.json().message).not.toMatch(/\n\s+at /);
  }

  const undeployed = unique('job');
  await api('POST', '/v0/jobs', { metadata: { name: undeployed } });
  const notReady = await api('POST', executionsUrl(undeployed), { tasks: [{}] });
  expect(notReady.statusCode).toBe(503);
  expect(notReady.json().error).toBe('not_deployed');
}, 30_000);

test('the example job (examples/job) deploys by upload and runs: exit 0 succeeds, a failing task reports its stderr', async () => {
  const name = unique('example');
  await api('POST', '/v0/jobs', { metadata: { name }, spec: { runtime: { command: ['node', 'task.js'], memory: 256 } } });
  const chunks: Buffer[] = [];
  for await (const chunk of tar.c({ gzip: true, cwd: path.join(repoRoot(), 'examples', 'job'), portable: true }, ['task.js'])) chunks.push(chunk as Buffer);
  const upload = await t.call(tenant.admin.apiKey, {
    method: 'PUT',
    url: `/v0/jobs/${name}/code`,
    payload: Buffer.concat(chunks),
    workspace: tenant.workspace,
    headers: { 'content-type': 'application/gzip' },
  });
  expect(upload.statusCode).toBeLessThan(300);
  await eventually(`job ${name} DEPLOYED`, async () => {
    const body = (await api('GET', `/v0/jobs/${name}`)).json();
    if (body.status === 'FAILED') throw new Error(JSON.stringify(body.events));
    return body.status === 'DEPLOYED' ? true : undefined;
  });
  const res = await api('POST', executionsUrl(name), { tasks: [{ text: 'one two three' }, { name: 'ada' }, { fail: true }] });
  expect(res.statusCode).toBe(200);
  const done = await finished(name, res.json().id);
  expect(done.status).toBe('failed');
  const tasks = (await api('GET', `${executionsUrl(name)}/${res.json().id}/tasks`)).json();
  expect(tasks.map((task: { status: string }) => task.status)).toEqual(['succeeded', 'succeeded', 'failed']);
  expect(tasks[2].conditions[0].message).toContain('task 2 was asked to fail');
}, 60_000);
