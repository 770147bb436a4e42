import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { buildRunApp } from '../../api/gateway/run-app';
import { deployFolder } from '../../cli/deploy';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { deploymentWorkflowId, revisionSandboxId } from '../../domain/workloads/workload';
import { repoRoot } from '../../scripts/stack/binaries';
import { benchConfig, startBenchPlatform } from '../common/platform';
import { summarize, type LatencySummary } from '../common/stats';
import { formatTable } from '../../domain/text-table';

/**
 * Scale-to-zero cold start (after a build, as root: `npm run bench:cold-start`).
 *
 * Deploys examples/agent with `minScale: 0` and a 1 s idle period, then repeatedly waits until it
 * has scaled to zero (process and sandbox removed) and times one POST through the gateway
 * (run_url) until its answer: the request is held while the deployment workflow starts the
 * revision again. Beside it, in turns so both see the same machine load:
 * - the floor: a bare `bwrap` spawn of the same node process, until it answers the same POST;
 * - where the time goes: the phases of each start from the deployment workflow's history, and
 *   the runtime's own start of a workload sandbox (agent answering; from the warm pool,
 *   HANGAR_SANDBOX_WARM_POOL, default 2), one part of the node's work.
 * Target: p50 <= 300 ms. Options: BENCH_SAMPLES (20). Own data folder (.data-bench/cold-start) and ports.
 */
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 20);
const AGENT = path.join(repoRoot(), 'examples', 'agent');
const BODY = '{"inputs":"hello"}';
const log = (line: string) => process.stdout.write(`${line}\n`);

/** One POST with the agent's usual body; resolves with the status code. */
function post(target: { socketPath: string } | { host: string; port: number }, urlPath: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ ...target, agent: false, method: 'POST', path: urlPath, headers: { ...headers, 'content-type': 'application/json', 'content-length': BODY.length } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(BODY);
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/**
 * The floor: bubblewrap (pid, ipc and uts namespaces, the host's files read-only, the agent's
 * folder bound) runs the same agent with the same node; spawn -> first answer to the same POST.
 */
async function bareStart(): Promise<number> {
  const port = await freePort();
  const began = performance.now();
  const child = spawn(
    'bwrap',
    ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--die-with-parent', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--ro-bind', AGENT, '/tmp/app', '--chdir', '/tmp/app', process.execPath, 'main.js'],
    { env: { PATH: process.env.PATH, PORT: String(port), HOST: '127.0.0.1' }, stdio: 'ignore' },
  );
  try {
    for (;;) {
      const status = await post({ host: '127.0.0.1', port }, '/').catch(() => 0);
      if (status === 200) return performance.now() - began;
      if (child.exitCode !== null) throw new Error(`the bare agent exited with ${child.exitCode}`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  } finally {
    child.kill('SIGKILL');
  }
}

type BenchPlatform = Awaited<ReturnType<typeof startBenchPlatform>>;

/** The example agent as it is, asking to scale to zero, deployed through the API. */
async function deployScaleToZeroAgent(platform: BenchPlatform, scratch: string) {
  const { app, credentials, pg } = platform;
  const folder = path.join(scratch, 'agent');
  fs.cpSync(AGENT, folder, { recursive: true });
  const manifest = JSON.parse(fs.readFileSync(path.join(folder, 'hangar.json'), 'utf8'));
  manifest.spec.runtime.minScale = 0;
  fs.writeFileSync(path.join(folder, 'hangar.json'), JSON.stringify(manifest));
  const name = `cold-${Date.now().toString(36)}`;
  const baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const deployed = await deployFolder(folder, { baseUrl, apiKey: credentials.apiKey, workspace: credentials.workspace }, { name });
  if (deployed.status !== 'DEPLOYED') throw new Error(`the agent did not deploy: ${JSON.stringify(deployed.events)}`);
  const { rows } = await pg.query<{ id: string }>("SELECT id FROM resources WHERE kind = 'agents' AND name = $1", [name]);
  return { name, resourceId: rows[0].id, sandboxId: revisionSandboxId(rows[0].id, 1) };
}

/** Until the workload is at zero: its route says so and its sandbox is gone. */
async function waitUntilAtZero(platform: BenchPlatform, resourceId: string, sandboxId: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const state = await platform.pg.query<{ scale: string }>("SELECT state ->> 'scale' AS scale FROM resources WHERE id = $1", [resourceId]);
    if (state.rows[0].scale === 'SCALED_TO_ZERO' && (await platform.runtime.status(sandboxId)) === undefined) return;
    if (Date.now() > deadline) throw new Error('the agent did not scale to zero within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface WakePhases {
  acceptedAt: number;
  dispatch: number;
  node: number;
}

/**
 * Where the time of the last start went, from the deployment workflow's history (server
 * timestamps): the wake update accepted -> the node activity started (a workflow task and
 * the activity's dispatch) -> completed (the node's work, ending with its notice to the
 * gateways). The rest of a request's time is the gateway's: the notice, forwarding, the answer.
 */
async function lastWakePhases(workflow: WorkflowHandle): Promise<WakePhases> {
  const at = (event: temporal.api.history.v1.IHistoryEvent) => Number(event.eventTime!.seconds) * 1000 + (event.eventTime!.nanos ?? 0) / 1e6;
  for (;;) {
    const events = (await workflow.fetchHistory()).events ?? [];
    const accepted = events.findLastIndex((e) => e.workflowExecutionUpdateAcceptedEventAttributes);
    const after = events.slice(accepted);
    const scheduled = after.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'wakeRevision');
    const started = scheduled && after.find((e) => e.activityTaskStartedEventAttributes?.scheduledEventId?.toString() === scheduled.eventId?.toString());
    const completed = scheduled && after.find((e) => e.activityTaskCompletedEventAttributes?.scheduledEventId?.toString() === scheduled.eventId?.toString());
    if (accepted >= 0 && started && completed) {
      return { acceptedAt: at(events[accepted]), dispatch: at(started) - at(events[accepted]), node: at(completed) - at(started) };
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * The runtime's own part: a workload sandbox with the bundle at /app, as a start from zero asks
 * for it (taking a warm sandbox over when the pool has one), until its agent answers.
 */
function runtimeStartProbe(platform: BenchPlatform, scratch: string): () => Promise<number> {
  const appDir = path.join(scratch, 'app');
  fs.cpSync(AGENT, appDir, { recursive: true });
  const runtimeSpec = { workspaceId: 'bench', image: 'base', memoryMb: 256, envs: [], volumes: [], code: appDir };
  const probeId = `cold-probe-${process.pid}`;
  return async () => {
    const began = performance.now();
    await platform.runtime.start({ id: probeId, ...runtimeSpec });
    const took = performance.now() - began;
    await platform.runtime.remove(probeId);
    return took;
  };
}

interface ColdStartSamples {
  coldStarts: number[];
  floors: number[];
  runtimeStarts: number[];
  phases: { toWorkflow: number[]; dispatch: number[]; node: number[]; proxy: number[] };
}

interface ColdStartProbe {
  /** Waits until the workload is at zero again. */
  atZero: () => Promise<void>;
  /** One request through the gateway; resolves with its status. */
  request: () => Promise<number>;
  lastWake: () => Promise<WakePhases>;
  runtimeStart: () => Promise<number>;
}

/** SAMPLES starts from zero, each beside a floor and a runtime start, after one untimed round (files cached, code warm). */
async function sampleColdStarts(probe: ColdStartProbe): Promise<ColdStartSamples> {
  const samples: ColdStartSamples = { coldStarts: [], floors: [], runtimeStarts: [], phases: { toWorkflow: [], dispatch: [], node: [], proxy: [] } };
  for (let i = -1; i < SAMPLES; i++) {
    await probe.atZero();
    const sentAt = Date.now();
    const began = performance.now();
    const status = await probe.request();
    const took = performance.now() - began;
    if (status !== 200) throw new Error(`the woken agent answered ${status}`);
    const wake = await probe.lastWake();
    const floor = await bareStart();
    const ownStart = await probe.runtimeStart();
    if (i < 0) continue;
    samples.coldStarts.push(took);
    samples.floors.push(floor);
    samples.runtimeStarts.push(ownStart);
    samples.phases.toWorkflow.push(wake.acceptedAt - sentAt);
    samples.phases.dispatch.push(wake.dispatch);
    samples.phases.node.push(wake.node);
    samples.phases.proxy.push(took - (wake.acceptedAt - sentAt) - wake.dispatch - wake.node);
    log(`  start ${i + 1}/${SAMPLES}: ${took.toFixed(0)} ms (floor ${floor.toFixed(0)} ms)`);
  }
  return samples;
}

function report(samples: ColdStartSamples): void {
  const figure = (values: number[]): LatencySummary => summarize(values, 1, 1);
  const cold = figure(samples.coldStarts);
  const floor = figure(samples.floors);
  const row = (what: string, s: LatencySummary) => [what, s.p50Ms.toFixed(0), s.p95Ms.toFixed(0), what.startsWith(' ') ? '' : (s.p50Ms / floor.p50Ms).toFixed(2)];
  log('');
  log(
    formatTable(
      ['measure', 'p50 ms', 'p95 ms', 'x floor p50'],
      [
        row('scale-to-zero -> first response (gateway)', cold),
        row('  gateway: auth, route, wake update sent and accepted', figure(samples.phases.toWorkflow)),
        row('  workflow task + node activity dispatch', figure(samples.phases.dispatch)),
        row('  node activity: sandbox, process until it listens', figure(samples.phases.node)),
        row('    of which the runtime start of a workload sandbox', figure(samples.runtimeStarts)),
        row('  gateway: notice received, request proxied and answered', figure(samples.phases.proxy)),
        row('floor: bare bwrap + node agent answering', floor),
      ],
    ),
  );
  log('');
  log(`cold start p50 ${cold.p50Ms.toFixed(0)} ms (target <= 300 ms), ${(cold.p50Ms / floor.p50Ms).toFixed(2)}x the floor; p95 ${cold.p95Ms.toFixed(0)} ms, ${(cold.p95Ms / floor.p95Ms).toFixed(2)}x`);
}

async function main() {
  const config = benchConfig('cold-start', 56660, { HANGAR_WORKLOAD_IDLE_SECONDS: '1' });
  log(`cold start benchmark: ${SAMPLES} starts from zero`);
  const platform = await startBenchPlatform(config, log);
  const { app, credentials } = platform;
  await app.listen({ host: '127.0.0.1', port: 0 });
  const gateway = await buildRunApp(platform.config);
  await gateway.listen({ host: '127.0.0.1', port: 0 });
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-cold-start-'));
  try {
    const agent = await deployScaleToZeroAgent(platform, scratch);
    const target = { host: '127.0.0.1', port: (gateway.server.address() as AddressInfo).port };
    const urlPath = `/${credentials.workspace}/agents/${agent.name}`;
    const auth = { authorization: `Bearer ${credentials.apiKey}` };
    const workflow = app.temporal.workflow.getHandle(deploymentWorkflowId(credentials.workspace, 'agents', agent.name));
    const samples = await sampleColdStarts({
      atZero: () => waitUntilAtZero(platform, agent.resourceId, agent.sandboxId),
      request: () => post(target, urlPath, auth),
      lastWake: () => lastWakePhases(workflow),
      runtimeStart: runtimeStartProbe(platform, scratch),
    });
    report(samples);
  } finally {
    await gateway.close();
    await platform.stop();
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
