import fs from 'node:fs';
import path from 'node:path';
import { TERMINAL_EXECUTION_STATUSES } from '../../../domain/jobs/execution';
import { buildWorkspaceImage } from '../../helpers/build-context';
import { buildTestImage, pushTestImage, startRegistry, type TestRegistry } from '../../helpers/oci-registry';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { testRuntime } from '../../helpers/sandbox-runtime';
import { eventually, startControlWorker, startNodeWorker, type RunningWorker } from '../../helpers/workers';
import { deployJobCode } from '../jobs/helpers';

// A job whose spec.runtime.image is an image the workspace built (FROM a static busybox of the
// test's own registry, with a file and ENV added): its tasks run a shell script of its bundle on it.
jest.setTimeout(180_000);

let t: TestApp;
let tenant: TestTenant;
let control: RunningWorker;
let node: RunningWorker;
let runtime: ReturnType<typeof testRuntime>;
let registry: TestRegistry;
let scratch: string;
let outDir: string;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('job-image') });
  tenant = await createTenant(t.app.pg, 'job-image');
  runtime = testRuntime(t.config.dataDir);
  scratch = path.join(t.config.dataDir, unique('job-image-scratch'));
  outDir = fs.mkdtempSync(path.join(t.config.dataDir, 'job-image-out-'));
  fs.chmodSync(outDir, 0o777);
  control = await startControlWorker(t.config, t.app.pg);
  node = await startNodeWorker(t.config, runtime, { pg: t.app.pg, jobMounts: [{ hostPath: outDir, mountPath: '/out', readOnly: false }] });
  registry = await startRegistry(path.join(scratch, 'registry'));
  buildTestImage(path.join(scratch, 'layout'), 'box', { files: { '/etc/motd': 'from the base\n' }, env: ['PATH=/bin'] });
}, 120_000);

afterAll(async () => {
  for (const sandbox of await runtime.list()) if (sandbox.id.startsWith('job-')) await runtime.remove(sandbox.id).catch(() => undefined);
  await registry?.close();
  await node?.stop();
  await control?.stop();
  await t.close();
});

const api = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: object | Buffer, headers?: Record<string, string>) =>
  t.call(tenant.admin.apiKey, { method, url, payload, workspace: tenant.workspace, ...(headers ? { headers } : {}) });

test('a job on a workspace image: its task sees the image\'s files and ENV, its bundle at /app', async () => {
  const base = `${registry.address}/${unique('test/box')}:1`;
  pushTestImage(path.join(scratch, 'layout'), 'box', base);
  const image = (await buildWorkspaceImage(api, base, 'jobimg', eventually)).replace(/:1$/, '');

  const job = unique('job');
  const created = await api('POST', '/v0/jobs', { metadata: { name: job }, spec: { runtime: { image: `${image}:1`, command: ['sh', '/app/task.sh'], memory: 256 } } });
  expect(created.statusCode).toBe(200);
  const row = await t.app.pg.query<{ id: string }>(`SELECT id FROM resources WHERE workspace_id = $1 AND kind = 'jobs' AND name = $2`, [tenant.workspaceId, job]);
  const script = 'cat /etc/motd /opt/added.txt > /out/seen.txt; echo "$GREETING" >> /out/seen.txt; test -x /bin/busybox && echo busybox >> /out/seen.txt\n';
  await deployJobCode(t.app.pg, t.config.dataDir, row.rows[0].id, { 'task.sh': script });

  const run = await api('POST', `/${tenant.workspace}/jobs/${job}/executions`, { tasks: [{}], id: 'one' });
  expect(run.statusCode).toBe(200);
  const done = await eventually('execution ended', async () => {
    const body = (await api('GET', `/${tenant.workspace}/jobs/${job}/executions/one`)).json();
    return TERMINAL_EXECUTION_STATUSES.includes(body.status) ? body : undefined;
  }, 90_000);
  expect(done.status).toBe('succeeded');
  expect(fs.readFileSync(path.join(outDir, 'seen.txt'), 'utf8')).toBe('from the base\nadded by the build\nfrom-the-image\nbusybox\n');
});

test("a job on an image of a registry: its execution pulls it onto its node (the job's events say so), then its task runs on it", async () => {
  buildTestImage(path.join(scratch, 'layout'), 'greeter', { files: { '/etc/motd': 'from the registry\n' }, env: ['PATH=/bin', 'GREETING=hello from the image'] });
  const image = `${registry.address}/${unique('test/greeter')}:1`;
  pushTestImage(path.join(scratch, 'layout'), 'greeter', image);

  const job = unique('job');
  const created = await api('POST', '/v0/jobs', { metadata: { name: job }, spec: { runtime: { image, command: ['sh', '/app/task.sh'], memory: 256 } } });
  expect(created.statusCode).toBe(200);
  const row = await t.app.pg.query<{ id: string }>(`SELECT id FROM resources WHERE workspace_id = $1 AND kind = 'jobs' AND name = $2`, [tenant.workspaceId, job]);
  // The code is filed as deployed without a deployment: only the execution can have pulled the image.
  await deployJobCode(t.app.pg, t.config.dataDir, row.rows[0].id, { 'task.sh': 'cat /etc/motd > /out/registry.txt; echo "$GREETING" >> /out/registry.txt\n' });
  expect(await runtime.findImage(image)).toBeUndefined();

  expect((await api('POST', `/${tenant.workspace}/jobs/${job}/executions`, { tasks: [{}], id: 'pulled' })).statusCode).toBe(200);
  const done = await eventually('execution ended', async () => {
    const body = (await api('GET', `/${tenant.workspace}/jobs/${job}/executions/pulled`)).json();
    return TERMINAL_EXECUTION_STATUSES.includes(body.status) ? body : undefined;
  }, 90_000);
  expect(done.status).toBe('succeeded');
  expect(fs.readFileSync(path.join(outDir, 'registry.txt'), 'utf8')).toBe('from the registry\nhello from the image\n');
  const events = (await api('GET', `/v0/jobs/${job}`)).json().events.map((event: { message: string }) => event.message);
  expect(events).toEqual(expect.arrayContaining([`waiting for its image: pulling '${image}' onto the node`, expect.stringMatching(new RegExp(`^image '${image.replace(/[.]/g, '\\.')}' pulled \\(sha256:[0-9a-f]{64}\\)$`))]));
});

test("a job on an image its registry does not have: the execution fails, the job's events say why", async () => {
  const job = unique('job');
  const image = `${registry.address}/test/never-pushed:1`;
  expect((await api('POST', '/v0/jobs', { metadata: { name: job }, spec: { runtime: { image, command: ['sh', '/app/task.sh'] } } })).statusCode).toBe(200);
  const row = await t.app.pg.query<{ id: string }>(`SELECT id FROM resources WHERE workspace_id = $1 AND kind = 'jobs' AND name = $2`, [tenant.workspaceId, job]);
  await deployJobCode(t.app.pg, t.config.dataDir, row.rows[0].id, { 'task.sh': 'true\n' });
  expect((await api('POST', `/${tenant.workspace}/jobs/${job}/executions`, { tasks: [{}], id: 'missing' })).statusCode).toBe(200);
  const done = await eventually('execution ended', async () => {
    const body = (await api('GET', `/${tenant.workspace}/jobs/${job}/executions/missing`)).json();
    return TERMINAL_EXECUTION_STATUSES.includes(body.status) ? body : undefined;
  }, 90_000);
  expect(done.status).toBe('failed');
  const events = (await api('GET', `/v0/jobs/${job}`)).json().events;
  expect(events.at(-1)).toEqual(expect.objectContaining({ type: 'Warning', message: expect.stringMatching(new RegExp(`^pull failed: image '${image.replace(/[.]/g, '\\.')}' was not found in its registry`)) }));
});
