import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Context } from '@temporalio/activity';
import { DefaultLogger, Runtime, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { repoRoot } from '../../scripts/stack/binaries';
import { freePort } from '../../scripts/stack/free-port';
import { launchUntilReady } from '../../scripts/stack/local-service';
import { SEARCH_ATTRIBUTES } from '../../scripts/stack/temporal';

/**
 * A Temporal test environment whose clock jumps ahead whenever every workflow waits on a timer,
 * so a workflow's hours of idle periods and expiries run in milliseconds. @temporalio/testing
 * would download its test server from the internet; we run the Java one scripts/install-deps.sh
 * fetched from Maven Central instead, through a launcher that takes the same arguments. The
 * search attributes our workflows set are registered, as the real stack does.
 *
 * We start the server ourselves rather than have the SDK spawn it: the SDK gives a server 5 s to
 * listen, and a JVM starting on two busy cores took longer in CI, failing a whole test file.
 */
export async function createTimeSkippingEnvironment(): Promise<TestWorkflowEnvironment> {
  quietWorkers();
  const server = await startTestServer();
  try {
    // The client's calls are retried as usual, except once the environment is closing: a retry
    // still waiting when the channel closes throws from its timer, outside any promise
    // ("Channel has been shut down"), and fails the whole test file.
    const retry = defaultGrpcRetryOptions({ maxIntervalMs: () => RETRY_MAX_INTERVAL_MS });
    const closing = { now: false };
    // createTimeSkipping takes no connection options; the factory it calls does (1.24).
    const create = (TestWorkflowEnvironment as unknown as { create(opts: object): Promise<TestWorkflowEnvironment> }).create.bind(TestWorkflowEnvironment);
    const env = await create({
      server: { type: 'existing' },
      address: server.address,
      supportsTimeSkipping: true,
      connectionOptions: {
        interceptors: [makeGrpcRetryInterceptor({ ...retry, retryableDecider: (attempt, status) => !closing.now && retry.retryableDecider(attempt, status) })],
      },
    });
    environments.set(env, { closing, server });
    const keyword = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
    await env.connection.operatorService.addSearchAttributes({
      namespace: env.namespace ?? 'default',
      searchAttributes: Object.fromEntries(SEARCH_ATTRIBUTES.map((name) => [name, keyword])),
    });
    return env;
  } catch (err) {
    await server.stop();
    throw err;
  }
}

/** How long a test server's JVM may take to listen: minutes only when the machine is saturated. */
const TEST_SERVER_START_TIMEOUT_MS = 120_000;

interface TestServer {
  address: string;
  stop(): Promise<void>;
}

/** The Java test server on a free port, listening; its log is quoted if it does not get there. */
async function startTestServer(): Promise<TestServer> {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-temporal-test-server-'));
  const service = await launchUntilReady(
    { log: () => undefined, bindToParent: true, reuseRunning: false, readyTimeoutMs: TEST_SERVER_START_TIMEOUT_MS },
    {
      spec: {
        name: 'the Temporal test server',
        argv: [path.join(repoRoot(), 'scripts', 'temporal-test-server.sh'), String(port)],
        runAs: [],
        logFile: path.join(dir, 'server.log'),
        pidFile: path.join(dir, 'server.pid'),
        marker: 'io.temporal.testserver.TestServer',
        stopSignal: 'SIGTERM',
        stopTimeoutMs: 5_000,
      },
      ports: [{ port, purpose: 'the Temporal test server' }],
      probe: () => tcpAccepts(port),
    },
  ).catch((err: unknown) => {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  const stop = async () => {
    await service.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  return { address: `127.0.0.1:${port}`, stop };
}

function tcpAccepts(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', reject);
  });
}

const RETRY_MAX_INTERVAL_MS = 1_000;
const environments = new WeakMap<TestWorkflowEnvironment, { closing: { now: boolean }; server: TestServer }>();

/**
 * Stops retrying the environment's calls, lets a retry already waiting run, then closes its
 * connections and stops its server.
 */
export async function closeTimeSkippingEnvironment(env: TestWorkflowEnvironment): Promise<void> {
  const own = environments.get(env);
  if (own) own.closing.now = true;
  await new Promise((resolve) => setTimeout(resolve, RETRY_MAX_INTERVAL_MS * 1.5));
  await env.teardown();
  await own?.server.stop();
}

/**
 * The Java test server rejects a workflow task that cancels a timer which fired while the task ran
 * (temporalio/sdk-java#2606, open); the workflow then stalls for good. Tests count these so that
 * they can tell a stall of the test server from one of the code under test.
 */
const TIMER_BUG = 'invalid history builder state for action';
let rejectedCompletions = 0;

/** How many workflow task completions the test server rejected for its timer bug so far. */
export function testServerTimerRejections(): number {
  return rejectedCompletions;
}

/**
 * Workers log every activity failure; tests that crash activities on purpose would drown their
 * own output. Only possible before the process's first worker: otherwise the runtime stays as is.
 */
function quietWorkers(): void {
  try {
    const logger = new DefaultLogger('WARN', (entry) => {
      const meta = JSON.stringify(entry.meta ?? {});
      if (meta.includes(TIMER_BUG)) rejectedCompletions++;
      else if (entry.message !== 'Activity failed') console.warn(`[temporal worker] ${entry.message} ${meta}`);
    });
    Runtime.install({ logger, telemetryOptions: { logging: { forward: {}, filter: { core: 'WARN', other: 'ERROR' } } } });
  } catch {
    // A runtime is already installed (another test file in this process made a worker).
  }
}

/**
 * Servers an interleaving test set aside (its timer bug, a stuck replay), each with the schedule
 * that was running on it. A server is closed only at the end, once its schedule has stopped
 * using it: closing it under a call that waits to be retried (the server busy) makes the retry
 * throw outside any promise ("Channel has been shut down"), which fails the whole test file.
 */
export class SetAsideServers {
  private readonly aside: { run: Promise<unknown>; stop: () => Promise<void> }[] = [];
  private readonly retired = new WeakSet<TestWorkflowEnvironment>();

  add(server: TestWorkflowEnvironment, run: Promise<unknown>, stop: () => Promise<void>): void {
    this.retired.add(server);
    this.aside.push({ run: run.catch(() => undefined), stop });
  }

  /** Ends a set-aside schedule at its next look at its server. */
  check(server: TestWorkflowEnvironment): void {
    if (this.retired.has(server)) throw new Error('this schedule was set aside');
  }

  /** Gives the schedules still waiting on a server a moment; the close then cancels their calls. */
  async closeAll(): Promise<void> {
    await Promise.race([Promise.allSettled(this.aside.map((aside) => aside.run)), new Promise((resolve) => setTimeout(resolve, 10_000))]);
    for (const aside of this.aside) await aside.stop();
  }
}

/** A test server with its worker, stopped in that order (the worker's polls end first). */
export function stopping(server: TestWorkflowEnvironment | undefined, worker: { stop(): Promise<void> } | undefined): () => Promise<void> {
  return async () => {
    await worker?.stop();
    if (server) await closeTimeSkippingEnvironment(server);
  };
}

/**
 * Waits for the workflow to end with time skipping locked (unlike result()): the clean-up needs
 * no timer, and the test server mishandles a timer it skips to while a workflow task that
 * cancels it runs (temporalio/sdk-java#2606), which a `delete` signal's task does.
 */
export async function finished(server: TestWorkflowEnvironment, workflowId: string, setAside: SetAsideServers): Promise<void> {
  const handle = server.client.workflow.getHandle(workflowId);
  while ((await handle.describe()).status.name === 'RUNNING') {
    setAside.check(server);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await handle.result();
}

/** The workflow's history, an event a line: activities with their input and result, signals and updates. */
export async function eventSummary(server: TestWorkflowEnvironment, workflowId: string): Promise<string[]> {
  const history = await server.client.workflow.getHandle(workflowId).fetchHistory();
  const text = (payloads?: { payloads?: { data?: Uint8Array | null }[] | null } | null) => (payloads?.payloads ?? []).map((p) => Buffer.from(p.data ?? []).toString()).join(',');
  return (history.events ?? []).map((event) => {
    const scheduled = event.activityTaskScheduledEventAttributes;
    const signalled = event.workflowExecutionSignaledEventAttributes;
    const detail = scheduled
      ? `${scheduled.activityType?.name}(${text(scheduled.input)})`
      : signalled
        ? `${signalled.signalName}(${text(signalled.input)})`
        : text(event.activityTaskCompletedEventAttributes?.result) || (event.workflowTaskFailedEventAttributes?.failure?.message ?? '');
    return `${event.eventId} ${event.eventType} ${detail}`;
  });
}

/** Workflow bundling logs nothing the tests read. */
export const quietLogger = { log: () => undefined, trace: () => undefined, debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * The time-skipping server with a worker on `taskQueue` running this repository's workflows with
 * `activities`, none cached (every task replays its history, as after a worker's restart); `stop`
 * ends both.
 */
export async function startTimeSkippingWorker(taskQueue: string, activities: object): Promise<{ env: TestWorkflowEnvironment; stop: () => Promise<void> }> {
  const workflowBundle = await bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: quietLogger });
  const env = await createTimeSkippingEnvironment();
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle, maxCachedWorkflows: 0, activities });
  const running = worker.run();
  const stop = stopping(env, {
    async stop() {
      worker.shutdown();
      await running.catch(() => undefined);
    },
  });
  return { env, stop };
}

/** Activities `names`, each handing the call to the implementation `of` holds for the calling workflow's id. */
export function perWorkflowActivities(names: readonly string[], of: Map<string, Record<string, (...args: unknown[]) => Promise<unknown>>>) {
  return Object.fromEntries(names.map((name) => [name, (...args: unknown[]) => of.get(Context.current().info.workflowExecution?.workflowId ?? '')![name](...args)]));
}

/**
 * The placement activities of a platform with one node, whose queue is `taskQueue` (the test's
 * worker): sandboxes, volumes and workload revisions placed by their workflows run their node
 * steps there (and a revision "moved" stays on it).
 */
export function oneNodePlacement(taskQueue: string) {
  const placed = async () => ({ nodeId: 'unit', nodeQueue: taskQueue });
  return { placeSandbox: placed, placeVolume: placed, placeRevision: placed, moveRevision: placed };
}
