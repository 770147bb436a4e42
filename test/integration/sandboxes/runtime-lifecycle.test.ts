import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import { detectCgroupDriver, parseCgroupMounts } from '../../../runtime/cgroups';
import { SandboxSpecError } from '../../../runtime/sandbox-runtime';
import { buildAgentForTests, callSandbox, exec, runtimeDataDir, sandboxSpec, testRuntime, until } from '../../helpers/sandbox-runtime';
import { typescriptRegister } from '../../helpers/typescript-child';
import { standInMmdebstrap } from '../../helpers/stand-in-mmdebstrap';

// Real sandboxes on a busy 2-core machine: generous limits; no test asserts on time.
jest.setTimeout(30_000);

const dataDir = runtimeDataDir('lifecycle');
let runtime: BwrapRuntime;

beforeAll(() => {
  runtime = testRuntime(dataDir);
});

afterAll(async () => {
  for (const sandbox of await runtime.list()) await runtime.remove(sandbox.id);
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));


test('start is idempotent and answers only once the API is up', async () => {
  const spec = sandboxSpec();
  const first = await runtime.start(spec);
  expect((await callSandbox(first.socketPath, 'GET', '/health')).json).toMatchObject({ status: 'ok', version: expect.any(String) });
  const again = await runtime.start(spec);
  expect(again).toEqual(first);
  const status = await runtime.status(spec.id);
  expect(status).toMatchObject({ id: spec.id, state: 'running', memoryMb: spec.memoryMb, oomKills: 0 });
  expect(status!.memoryUsageBytes).toBeGreaterThan(0);
});

test('a spec the runtime cannot honour is refused before anything starts', async () => {
  await expect(runtime.start(sandboxSpec({ image: 'no-such-image' }))).rejects.toThrow(SandboxSpecError);
  await expect(runtime.start(sandboxSpec({ memoryMb: 8 }))).rejects.toThrow(/memory/);
  await expect(runtime.start(sandboxSpec({ id: '../escape' }))).rejects.toThrow(/id must be/);
  await expect(runtime.start(sandboxSpec({ envs: [{ name: 'BAD NAME', value: 'x' }] }))).rejects.toThrow(/envs/);
  await expect(runtime.start(sandboxSpec({ volumes: [{ hostPath: dataDir, mountPath: '/etc/x', readOnly: false }] }))).rejects.toThrow(/reserved/);
  await expect(runtime.start(sandboxSpec({ volumes: [{ hostPath: '/nonexistent', mountPath: '/data', readOnly: false }] }))).rejects.toThrow(/does not exist/);
});

test('the memory limit is enforced: a process allocating past it is killed, the sandbox lives on', async () => {
  const spec = sandboxSpec({ memoryMb: 128 });
  const handle = await runtime.start(spec);
  const hog = await exec(handle.socketPath, 'python3 -c "a = bytearray(400 * 1024 * 1024); print(\'allocated\')"');
  expect(hog.stdout).not.toMatch(/allocated/);
  expect(hog.status).toBe('failed');
  expect(hog.exitCode).toBe(137);
  expect((await runtime.status(spec.id))!.oomKills).toBeGreaterThanOrEqual(1);
  // Below the limit works, and the API survived the OOM kill.
  const fits = await exec(handle.socketPath, 'python3 -c "a = bytearray(32 * 1024 * 1024); print(\'allocated\')"');
  expect(fits.stdout).toBe('allocated\n');
});

test('freeze stops all progress, thaw resumes it, and the first request after thaw succeeds', async () => {
  const spec = sandboxSpec();
  const handle = await runtime.start(spec);
  await callSandbox(handle.socketPath, 'POST', '/process', { command: 'i=0; while true; do i=$((i+1)); echo $i > /tmp/counter; sleep 0.01; done', name: 'ticker' });
  const counter = path.join(runtime.layout(spec.id).writable.find((f) => f.sandboxPath === '/tmp')!.hostPath, 'counter');
  const read = () => Number(fs.readFileSync(counter, 'utf8').trim() || 0);
  await until('the ticker to tick', async () => fs.existsSync(counter) && read() > 2);

  await runtime.freeze(spec.id);
  expect(await runtime.isFrozen(spec.id)).toBe(true);
  expect((await runtime.status(spec.id))!.state).toBe('frozen');
  const frozenAt = read();
  await sleep(300);
  expect(read()).toBe(frozenAt);

  await runtime.thaw(spec.id);
  expect((await callSandbox(handle.socketPath, 'GET', '/process/ticker')).json.status).toBe('running');
  await until('the ticker to resume', async () => read() > frozenAt + 2);
  expect((await runtime.status(spec.id))!.state).toBe('running');
});

test("stop ends every process and keeps the user's files for the next start", async () => {
  const spec = sandboxSpec();
  const handle = await runtime.start(spec);
  await exec(handle.socketPath, 'echo kept > /home/user/notes.txt; echo kept > /workspace/w.txt');
  await callSandbox(handle.socketPath, 'POST', '/process', { command: 'sleep 1000' });
  const pids = await runtime.pids(spec.id);
  expect(pids.length).toBeGreaterThan(2);

  await runtime.stop(spec.id);
  expect((await runtime.status(spec.id))!.state).toBe('stopped');
  for (const pid of pids) expect(fs.existsSync(`/proc/${pid}`) && !fs.readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ')).toBe(false);

  const restarted = await runtime.start(spec);
  expect((await exec(restarted.socketPath, 'cat /home/user/notes.txt /workspace/w.txt')).stdout).toBe('kept\nkept\n');
});

test('remove deletes the sandbox, its files and its cgroups', async () => {
  const spec = sandboxSpec();
  await runtime.start(spec);
  const state = JSON.parse(fs.readFileSync(runtime.layout(spec.id).stateFile, 'utf8')) as { cgroupDirs: string[] };
  expect(state.cgroupDirs.every((dir) => fs.existsSync(dir))).toBe(true);
  await runtime.remove(spec.id);
  expect(fs.existsSync(runtime.layout(spec.id).root)).toBe(false);
  expect(state.cgroupDirs.some((dir) => fs.existsSync(dir))).toBe(false);
  expect(await runtime.status(spec.id)).toBeUndefined();
  await runtime.remove(spec.id);
});

test('remove answers how the sandbox ended, a thaw no one signalled included, and answers the same when asked again', async () => {
  const spec = sandboxSpec();
  await runtime.start(spec);
  const frozen = await runtime.freeze(spec.id);
  // A gateway thaws it to serve a request, and dies before telling anyone.
  const thawed = await runtime.thaw(spec.id);
  expect(thawed.generation).toBe(frozen.generation + 1);
  const removal = await runtime.remove(spec.id);
  expect(removal.freeze).toEqual(thawed);
  expect(removal.stoppedAt).toBeGreaterThanOrEqual(thawed.thawedAt!);
  // The activity that asked died before answering: its retry learns the same end, not a later one.
  await sleep(20);
  expect(await runtime.remove(spec.id)).toEqual(removal);
  // The same id started again is a new life, whose end is its own.
  await runtime.start(spec);
  const again = await runtime.remove(spec.id);
  expect(again.stoppedAt).toBeGreaterThan(removal.stoppedAt);
  expect(again.freeze).toEqual({ generation: 0, frozen: false });
});

test('environment: the spec envs reach processes, never the agent (NODE_OPTIONS cannot break it)', async () => {
  const spec = sandboxSpec({ envs: [{ name: 'GREETING', value: 'hello sandbox' }, { name: 'NODE_OPTIONS', value: '--no-such-node-flag' }] });
  const handle = await runtime.start(spec);
  const env = await exec(handle.socketPath, 'echo "$GREETING|$HOME|$USER|$HANGAR_AGENT_CONFIG|$(pwd)"', { env: { EXTRA: 'x' } });
  expect(env.stdout).toBe('hello sandbox|/home/user|user||/home/user\n');
});

test('volumes: a read-write folder is shared with the host, a read-only one cannot be written', async () => {
  const rw = fs.mkdtempSync(path.join(dataDir, 'vol-rw-'));
  const ro = fs.mkdtempSync(path.join(dataDir, 'vol-ro-'));
  fs.chmodSync(rw, 0o777);
  fs.chmodSync(ro, 0o755);
  fs.writeFileSync(path.join(ro, 'given.txt'), 'from host\n');
  const spec = sandboxSpec({
    volumes: [
      { hostPath: rw, mountPath: '/data/rw', readOnly: false },
      { hostPath: ro, mountPath: '/workspace/ro', readOnly: true },
    ],
  });
  const handle = await runtime.start(spec);
  const result = await exec(handle.socketPath, 'echo written > /data/rw/out.txt; cat /workspace/ro/given.txt; echo x > /workspace/ro/nope 2>&1');
  expect(result.stdout).toBe('from host\n');
  expect(result.stderr).toMatch(/Read-only file system/);
  expect(fs.readFileSync(path.join(rw, 'out.txt'), 'utf8')).toBe('written\n');
  expect((await callSandbox(handle.socketPath, 'PUT', '/filesystem/workspace/ro/api.txt', { content: 'x' })).status).toBe(403);
  expect((await callSandbox(handle.socketPath, 'PUT', '/filesystem/data/rw/api.txt', { content: 'via api' })).status).toBe(200);
  expect(fs.readFileSync(path.join(rw, 'api.txt'), 'utf8')).toBe('via api');
});

describe('a worker restart', () => {
  // A stand-in for the worker: another Node process that loads the runtime (compiled on the fly).
  function workerProcess(script: string) {
    const register = typescriptRegister(dataDir);
    const child = spawn(process.execPath, ['-r', register, '-e', script], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    return { child, output: () => output, exited: new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code))) };
  }

  const startScript = (id: string, then: string, agentDir = buildAgentForTests()) => `
    const { BwrapRuntime } = require(${JSON.stringify(path.resolve('runtime/bwrap-runtime.ts'))});
    const runtime = new BwrapRuntime({ dataDir: ${JSON.stringify(dataDir)}, agentDir: ${JSON.stringify(agentDir)} });
    runtime.start({ id: ${JSON.stringify(id)}, workspaceId: 'ws', image: 'base', memoryMb: 256, envs: [], volumes: [] }).then(() => { ${then} });`;

  test('does not take running sandboxes down; the new worker re-adopts them', async () => {
    const spec = sandboxSpec();
    const worker = workerProcess(startScript(spec.id, "console.log('started'); process.kill(process.pid, 'SIGKILL');"));
    await worker.exited;
    expect(worker.output()).toContain('started');

    // A fresh runtime (the restarted worker) finds the sandbox running and can operate it.
    const restarted = testRuntime(dataDir);
    expect((await restarted.list()).find((s) => s.id === spec.id)).toMatchObject({ state: 'running' });
    const socket = restarted.socketPath(spec.id);
    expect((await exec(socket, 'echo still here')).stdout).toBe('still here\n');
    await restarted.freeze(spec.id);
    expect(await restarted.isFrozen(spec.id)).toBe(true);
    await restarted.thaw(spec.id);
    expect((await restarted.start(spec)).socketPath).toBe(socket);
    await restarted.remove(spec.id);
  });

  test('killed mid-start leaves nothing that a new start does not clean up', async () => {
    const spec = sandboxSpec();
    const state = runtime.layout(spec.id).stateFile;
    // An agent that never answers holds the worker inside start() for as long as the test likes.
    const hungAgent = fs.mkdtempSync(path.join(dataDir, 'hung-agent-'));
    fs.chmodSync(hungAgent, 0o755);
    fs.writeFileSync(path.join(hungAgent, 'main.js'), 'setInterval(() => {}, 60_000);\n', { mode: 0o644 });
    const worker = workerProcess(startScript(spec.id, "console.log('finished start')", hungAgent));
    await until('bubblewrap to be launched', async () => fs.existsSync(state) && JSON.parse(fs.readFileSync(state, 'utf8')).pid);
    worker.child.kill('SIGKILL');
    await worker.exited;
    expect(worker.output()).not.toContain('finished start');
    expect(JSON.parse(fs.readFileSync(state, 'utf8'))).toMatchObject({ phase: 'starting', pid: expect.any(Number) });

    const restarted = testRuntime(dataDir);
    expect((await restarted.status(spec.id))!.state).toBe('stopped');
    const handle = await restarted.start(spec);
    expect((await exec(handle.socketPath, 'echo recovered')).stdout).toBe('recovered\n');
    // Exactly one sandbox's processes: one bubblewrap outside, its init, the agent.
    const pids = await restarted.pids(spec.id);
    const commands = pids.map((pid) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0'));
    expect(commands.some((argv) => argv.includes('/opt/hangar/agent/main.js'))).toBe(true);
    expect(commands.filter((argv) => argv[0].endsWith('bwrap'))).toHaveLength(2);
    expect(commands.filter((argv) => argv[0].endsWith('node'))).toHaveLength(1);
    await restarted.remove(spec.id);
  });
});

// Warm sandboxes run on base-image, the default image, once the node has it: here a stand-in's
// (a busybox tree built in seconds) in the test's own data folder.
describe('a warm pool', () => {
  let pooled: BwrapRuntime;
  const onWarmImage = (overrides: Parameters<typeof sandboxSpec>[0] = {}) => sandboxSpec({ image: 'base-image', ...overrides });
  beforeAll(async () => {
    const standIn = standInMmdebstrap(path.join(dataDir, 'stand-in'));
    pooled = testRuntime(dataDir, { warmPool: 1, images: { mmdebstrapPath: standIn.path } });
    await pooled.ensureBaseImage();
    await pooled.prewarm();
    await until('a warm sandbox', () => pooled.warmPoolStatus().ready === 1);
    expect(pooled.warmPoolStatus().lastError).toBeUndefined();
  });
  afterAll(() => pooled.close());

  test('a new sandbox takes over a warm one, with its own identity, limits and environment', async () => {
    const warmId = (await fs.promises.readdir(path.join(dataDir, 'sandboxes'))).find((n) => n.startsWith('warm_'))!;
    const warmPids = await pooled.pids(warmId);
    const spec = onWarmImage({ memoryMb: 300, envs: [{ name: 'OWNER', value: 'me' }], name: 'taken-over' });
    const handle = await pooled.start(spec);
    // The very processes of the warm sandbox now serve this one.
    expect(await pooled.pids(spec.id)).toEqual(expect.arrayContaining(warmPids.slice(0, 1)));
    const inside = await exec(handle.socketPath, 'hostname; cat /etc/hostname; grep -c "$(hostname)" /etc/hosts; echo "$OWNER $HOSTNAME"');
    expect(inside.stdout).toBe(`${spec.id}\n${spec.id}\n2\nme ${spec.id}\n`);
    expect((await callSandbox(handle.socketPath, 'GET', '/')).json.sandbox).toBe('taken-over');
    expect((await pooled.status(spec.id))!).toMatchObject({ state: 'running', memoryMb: 300 });
    const limit = fs.readFileSync(path.join(JSON.parse(fs.readFileSync(pooled.layout(spec.id).stateFile, 'utf8')).cgroupDirs[0], 'memory.limit_in_bytes'), 'utf8');
    expect(Number(limit)).toBe(300 * 1024 * 1024);
    expect((await pooled.list()).map((s) => s.id)).not.toContain(warmId);
    // A sandbox in use cannot be reset through the reload meant for warm ones.
    expect((await callSandbox(handle.socketPath, 'POST', '/internal/reload')).status).toBe(409);
    // The pool fills up again.
    await until('the pool to refill', () => pooled.warmPoolStatus().ready === 1);
    expect(pooled.warmPoolStatus().lastError).toBeUndefined();
    await pooled.remove(spec.id);
  });

  test('a sandbox with volumes or existing files starts cold', async () => {
    const spec = onWarmImage();
    await pooled.start(spec);
    await pooled.stop(spec.id);
    const warmBefore = (await fs.promises.readdir(path.join(dataDir, 'sandboxes'))).filter((n) => n.startsWith('warm_'));
    await pooled.start(spec);
    expect((await fs.promises.readdir(path.join(dataDir, 'sandboxes'))).filter((n) => n.startsWith('warm_'))).toEqual(expect.arrayContaining(warmBefore));
    await pooled.remove(spec.id);
  });

  test("a sandbox on another image than the warm ones' (base, the host's folders) starts cold", async () => {
    await until('a warm sandbox', () => pooled.warmPoolStatus().ready === 1);
    const warmBefore = (await fs.promises.readdir(path.join(dataDir, 'sandboxes'))).filter((n) => n.startsWith('warm_'));
    const spec = sandboxSpec({ image: 'base' });
    const handle = await pooled.start(spec);
    expect((await fs.promises.readdir(path.join(dataDir, 'sandboxes'))).filter((n) => n.startsWith('warm_'))).toEqual(warmBefore);
    expect((await exec(handle.socketPath, 'test -e /usr/bin/skopeo; echo $?')).stdout).toBe('0\n');
    await pooled.remove(spec.id);
  });
});

test('cgroup v2 driver: freezes, lists and kills a group on the unified hierarchy', async () => {
  const mounts = parseCgroupMounts(fs.readFileSync('/proc/self/mounts', 'utf8'));
  if (!mounts.v2 || !fs.existsSync(path.join(mounts.v2, 'cgroup.controllers'))) {
    console.warn('no cgroup2 hierarchy on this machine: v2 driver not exercised');
    return;
  }
  const driver = detectCgroupDriver({ version: 2, parent: `/hangar-test-${process.pid}` });
  const group = await driver.create('v2-probe');
  const child = spawn('/bin/sh', ['-c', `echo $$ > ${group.procsFiles[0]}; exec sleep 1000`], { stdio: 'ignore' });
  await until('the child to join', async () => (await group.pids()).includes(child.pid!));
  await group.freeze();
  expect(await group.isFrozen()).toBe(true);
  expect(fs.readFileSync(path.join(group.dirs[0], 'cgroup.events'), 'utf8')).toMatch(/^frozen 1$/m);
  await group.thaw();
  expect(await group.isFrozen()).toBe(false);
  await group.destroy();
  expect(fs.existsSync(group.dirs[0])).toBe(false);
  fs.rmdirSync(path.join(mounts.v2, `hangar-test-${process.pid}`));
});
