import { Context } from '@temporalio/activity';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import fc from 'fast-check';
import { SandboxNodeModel } from '../../fakes/sandbox-node-model';
import { createTimeSkippingEnvironment, eventSummary, finished, oneNodePlacement, quietLogger, SetAsideServers, stopping, testServerTimerRejections } from '../../helpers/time-skipping';
import type { SandboxLifecycleInput } from '../../../workflows/sandbox-lifecycle';

/**
 * The real sandbox lifecycle workflow against an in-memory node, on Temporal's time-skipping
 * test server. fast-check generates schedules: gateway requests (thawing a frozen sandbox and
 * signalling `resumed`, or touching), resumes whose signal is lost, spec changes (a ttl) and
 * deletes, delivered inside any activity (after its effect, before its answer: every await
 * point of the standby, resume, expiry and delete paths), restores to a snapshot, crashes that lose an activity's answer
 * (the worker restarted; the retry finds the effect done), and idle periods between. The worker
 * keeps no workflow in its cache, so every workflow task replays the history, as after a restart.
 *
 * After each schedule: the reported state is the node's, and usage covers the sandbox's life
 * from start to stop exactly once, each period in the state the node really had.
 */

const RUNS = Number(process.env.HANGAR_INTERLEAVING_RUNS || 40);
const TASK_QUEUE = 'sandbox-interleavings';
const IDLE_TIMEOUT_MS = 5_000;

type Action = 'request' | 'lostResume' | 'ttl' | 'delete' | 'restore';
const actionArb = fc.constantFrom<Action>('request', 'request', 'lostResume', 'ttl', 'delete', 'restore');
const scheduleArb = fc.record({
  during: fc.array(fc.record({ call: fc.nat(24), actions: fc.array(actionArb, { maxLength: 2 }), crash: fc.boolean() }), { maxLength: 8 }),
  idle: fc.array(fc.record({ advanceMs: fc.integer({ min: 0, max: 70_000 }), actions: fc.array(actionArb, { maxLength: 2 }) }), { maxLength: 6 }),
});
type Schedule = typeof scheduleArb extends fc.Arbitrary<infer T> ? T : never;

let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;
/** Each schedule's node, by its workflow id: a workflow set aside can never touch another's node. */
const nodes = new Map<string, SandboxNodeModel>();
let runs = 0;
let discarded = 0;
const findings: string[] = [];

let worker: { stop(): Promise<void> } | undefined;

beforeAll(async () => {
  bundle = await bundleWorkflowCode({ workflowsPath: require.resolve('../../../workflows/sandbox-lifecycle'), logger: quietLogger });
  await startServer();
}, 120_000);

const setAside = new SetAsideServers();

afterAll(async () => {
  await setAside.closeAll();
  await stopServer();
}, 60_000);

/**
 * A fresh test server and worker. A workflow the test server rejected for its timer bug holds its
 * time-skipping lock for good (every later sleep would run in real time): its server is replaced.
 */
async function startServer(): Promise<void> {
  env = await createTimeSkippingEnvironment();
  const created = await Worker.create({
    connection: env.nativeConnection,
    taskQueue: TASK_QUEUE,
    workflowBundle: bundle,
    maxCachedWorkflows: 0,
    // Each call goes to the node of the workflow that made it.
    activities: {
      ...oneNodePlacement(TASK_QUEUE),
      ...Object.fromEntries(
      ['startSandbox', 'enterStandby', 'freezeState', 'measureSandbox', 'stopSandbox', 'restoreSandbox', 'markSandboxFailed', 'markSandboxRestoreFailed', 'markSandboxDeleting', 'deleteSandboxRecord', 'setSandboxState', 'recordSandboxUsage'].map((name) => [
        name,
        (...args: unknown[]) => {
          const node = nodes.get(Context.current().info.workflowExecution?.workflowId ?? '')!;
          const all = { ...node.nodeActivities(), ...node.controlActivities() } as Record<string, (...a: unknown[]) => Promise<unknown>>;
          return all[name](...args);
        },
      ]),
      ),
    },
  });
  const running = created.run();
  worker = {
    async stop() {
      created.shutdown();
      await running.catch(() => undefined);
    },
  };
}

async function stopServer(): Promise<void> {
  await stopping(env, worker)();
}

test('every generated schedule leaves the reported state and the usage true to the node', async () => {
  await fc.assert(
    fc.asyncProperty(scheduleArb, async (schedule) => {
      const workflowId = `sandbox-${runs++}`;
      const run = runSchedule(schedule, workflowId);
      const problems = await withinRealTime(run, workflowId);
      // A schedule the test server could not run (its timer bug) proves nothing either way.
      if (problems === 'test server fault') {
        discarded++;
        setAside.add(env, run, stopping(env, worker));
        await startServer();
        fc.pre(false);
        return;
      }
      if (problems.length > 0) findings.push(problems[0]);
      if (problems.length > 0 && process.env.HANGAR_INTERLEAVING_DEBUG) console.log(JSON.stringify({ schedule, node: nodes.get(workflowId)!.history, usage: [...nodes.get(workflowId)!.usage.values()], events: await eventSummary(env, workflowId) }));
      expect(problems).toEqual([]);
    }),
    { numRuns: RUNS, seed: process.env.HANGAR_INTERLEAVING_SEED ? Number(process.env.HANGAR_INTERLEAVING_SEED) : undefined, path: process.env.HANGAR_INTERLEAVING_PATH || undefined },
  );
  // The closing note of issue #14 quotes these.
  console.info(`sandbox lifecycle: ${runs} generated schedules ran (${discarded} discarded for the test server's timer bug); findings: ${findings.length ? findings.join('; ') : 'none'}`);
}, 1_800_000);

async function runSchedule(schedule: Schedule, workflowId: string): Promise<string[]> {
  // This run's server: one set aside must not reach the next run's.
  const server = env;
  const handle = () => server.client.workflow.getHandle(workflowId);
  const during = new Map(schedule.during.map((step) => [step.call, step]));
  let settling = false;
  let restores = 0;
  const act = async (action: Action) => {
    const now = await server.currentTimeMs();
    const signal = (name: string, ...args: unknown[]) => handle().signal(name, ...args).catch(() => undefined);
    if (action === 'delete') return signal('delete');
    if (action === 'ttl') return signal('spec', { runtime: { ttl: '90s' } });
    if (action === 'restore') return signal('restore', { snapshotId: 'snap', snapshotName: 'snap', restoreId: `restore-${restores++}` });
    const thawed = await node.request();
    if (action === 'lostResume') return;
    return thawed ? signal('resumed', thawed.thawedAt, thawed.generation) : signal('touch', now);
  };
  const node = new SandboxNodeModel(
    () => server.currentTimeMs(),
    async (_activity, call) => {
      const step = settling ? undefined : during.get(call);
      for (const action of step?.actions ?? []) await act(action);
      return step?.crash ? 'crash' : 'answer';
    },
  );
  nodes.set(workflowId, node);
  const input: SandboxLifecycleInput = {
    key: { id: workflowId, workspace: 'ws', workspaceId: 'ws-id', name: workflowId },
    spec: {},
    nodeQueue: TASK_QUEUE,
    idleTimeoutMs: IDLE_TIMEOUT_MS,
    createdAt: await server.currentTimeMs(),
    phase: 'create',
  };
  await server.client.workflow.start('sandboxLifecycle', { taskQueue: TASK_QUEUE, workflowId, args: [input] });
  for (const step of schedule.idle) {
    setAside.check(server);
    await server.sleep(step.advanceMs);
    for (const action of step.actions) await act(action);
  }
  const problems: string[] = [];
  const trace = (what: string) => process.env.HANGAR_INTERLEAVING_DEBUG && console.log(`${workflowId} ${what} ${Date.now()}`);
  trace('final sleep');
  // Nothing more happens; long enough for an idle sandbox to freeze and a standby to ask its node
  // (a lost resume) at its next meter, from whatever point the schedule left it at.
  settling = true;
  setAside.check(server);
  await server.sleep(IDLE_TIMEOUT_MS + 2 * 60_000);
  setAside.check(server);
  trace('describe');
  if ((await handle().describe()).status.name === 'RUNNING') {
    trace('settle');
    const reported = await settledState(server, workflowId, node);
    trace('settled');
    if (reported.query !== node.nodeState()) problems.push(`reports ${reported.query}, the node is ${node.nodeState()}`);
    if (reported.persisted !== node.nodeState()) problems.push(`stored state ${reported.persisted}, the node is ${node.nodeState()}`);
    await handle().signal('delete');
  }
  trace('result');
  await finished(server, workflowId, setAside);
  trace('done');
  return [...problems, ...node.meteringProblems()];
}

/**
 * The workflow's state once it has taken in everything: nothing in flight, the same answer twice,
 * and stored. Gives up after a few seconds and answers what it saw, for the assertions to show.
 */
async function settledState(server: TestWorkflowEnvironment, workflowId: string, node: SandboxNodeModel): Promise<{ query: string; persisted: string }> {
  let previous = '';
  const persisted = () => node.reportedStates.at(-1) ?? 'RUNNING';
  for (let attempt = 0; attempt < 100; attempt++) {
    setAside.check(server);
    const { state } = await server.client.workflow.getHandle(workflowId).query<{ state: string }>('state');
    if (node.inflight === 0 && state === previous && persisted() === state) break;
    previous = state;
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
  return { query: previous, persisted: persisted() };
}

/**
 * A schedule takes about a second. One whose workflow task the test server rejected for its timer
 * bug is ended and set aside; one that stalls otherwise (a stuck workflow) fails with its history.
 */
async function withinRealTime(run: Promise<string[]>, workflowId: string): Promise<string[] | 'test server fault'> {
  const rejectedBefore = testServerTimerRejections();
  const deadline = Date.now() + 60_000;
  let outcome: string[] | undefined;
  void run.then(
    (problems) => (outcome = problems),
    (err: Error) => (outcome = [`the schedule failed: ${err.message}`]),
  );
  while (outcome === undefined) {
    if (testServerTimerRejections() > rejectedBefore) {
      return 'test server fault';
    }
    if (Date.now() > deadline) return [`schedule stalled; its workflow's last events: ${(await eventSummary(env, workflowId)).slice(-12).join(' | ')}`];
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return outcome;
}

