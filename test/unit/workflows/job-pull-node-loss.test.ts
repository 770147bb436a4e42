import fs from 'node:fs';
import path from 'node:path';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { temporal as proto } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { repoRoot } from '../../../scripts/stack/binaries';
import { startTimeSkippingWorker } from '../../helpers/time-skipping';
import type { JobExecutionInput } from '../../../workflows/job-execution';

/**
 * A job execution on a registry image waits for the workspace's image-pull workflow
 * (awaitImagePull, on the control queue) rather than pulling with a step on its node: when that
 * wait says the pull's node is LOST, the execution asks placement, as for a step that timed out,
 * and pulls again on the node it moved to (waiting while it is told to); a pull the registry
 * refused fails the execution without a move. Activities of the test's own; no workflow cached,
 * so every task replays its history.
 */
jest.setTimeout(120_000);

const TASK_QUEUE = 'job-pull-unit';
type Verdict = { do: 'retry' } | { do: 'wait'; reason: string } | { do: 'moved'; to: { nodeId: string; nodeQueue: string } };
interface Script {
  pull: (nodeId: string) => Promise<{ digest?: string }>;
  verdicts: Verdict[];
  calls: string[];
}

let env: TestWorkflowEnvironment;
let stop: () => Promise<void>;
const scripts = new Map<string, Script>();
const script = () => scripts.get(Context.current().info.workflowExecution?.workflowId ?? '')!;
const digest = `sha256:${'d'.repeat(64)}`;

beforeAll(async () => {
  ({ env, stop } = await startTimeSkippingWorker(TASK_QUEUE, {
    placeJobExecution: async () => ({ nodeId: 'a', nodeQueue: TASK_QUEUE }),
    moveJobExecutionOffLostNode: async (_id: string, from: string) => {
      script().calls.push(`move off ${from}`);
      return script().verdicts.shift() ?? { do: 'retry' };
    },
    markJobExecution: async () => undefined,
    awaitImagePull: async (key: { name: string }, spec: { runtime: { image: string; registryConnection?: string } }, _queue: string, watch?: { nodeId: string }) => {
      script().calls.push(`await ${spec.runtime.image} via ${spec.runtime.registryConnection} for ${key.name} on ${watch?.nodeId}`);
      return script().pull(watch!.nodeId);
    },
    pullSandboxImage: async () => {
      throw new Error('a new execution does not pull with its own step');
    },
    startJobSandbox: async () => void script().calls.push('start sandbox'),
    removeJobSandbox: async () => undefined,
    runJobTasks: async ({ indices }: { indices: number[] }) => indices.map((index) => ({ index, status: 'succeeded', retries: 0, reason: 'exit', seconds: 1 })),
    finishJobExecution: async (input: { status: string }) => void script().calls.push(`finish ${input.status}`),
  }));
}, 120_000);

afterAll(async () => stop?.(), 60_000);

async function run(workflowId: string, pull: Script['pull'], verdicts: Verdict[]) {
  const record: Script = { pull, verdicts, calls: [] };
  scripts.set(workflowId, record);
  const key = { id: `row-${workflowId}`, executionId: workflowId, accountId: 'acc', workspace: 'ws', workspaceId: 'ws-id', jobId: 'job-id', jobName: 'puller' };
  const settings = { image: '127.0.0.1:5000/team/box:1', registryConnection: 'my-registry', command: ['sh', 'run.sh'], memoryMb: 128, envs: {}, maxConcurrentTasks: 2, maxRetries: 0, timeoutSeconds: 60 };
  const input: JobExecutionInput = { key, settings, taskCount: 3, codeDir: '/tmp/code', nodeQueue: TASK_QUEUE, createdAt: 1_700_000_000_000 };
  const result = await env.client.workflow.execute('jobExecution', { taskQueue: TASK_QUEUE, workflowId, args: [input] });
  return { ...record, result };
}

const lostOn = (nodeId: string) => ApplicationFailure.nonRetryable(`node '${nodeId}' is LOST while it pulls '127.0.0.1:5000/team/box:1'`, 'NodeLost');
const wait = (from: string): Verdict => ({ do: 'wait', reason: `node '${from}' is lost and no other node is READY` });

test('the pull\'s node LOST: the execution moves (after waiting for a node) and pulls there, then runs', async () => {
  const record = await run('moved', async (nodeId) => {
    if (nodeId === 'a') throw lostOn('a');
    return { digest };
  }, [wait('a'), { do: 'moved', to: { nodeId: 'b', nodeQueue: TASK_QUEUE } }]);
  expect(record.result).toEqual({ status: 'succeeded' });
  expect(record.calls).toEqual([
    'await 127.0.0.1:5000/team/box:1 via my-registry for puller on a',
    'move off a',
    'move off a',
    'await 127.0.0.1:5000/team/box:1 via my-registry for puller on b',
    'start sandbox',
    'finish succeeded',
  ]);
  // HANGAR_RECORD_HISTORIES=1: this run becomes a replay fixture (test/unit/workflows/replay.test.ts).
  if (process.env.HANGAR_RECORD_HISTORIES) {
    const history = proto.api.history.v1.History.toObject((await env.client.workflow.getHandle('moved').fetchHistory()) as proto.api.history.v1.History, { longs: String, enums: String, bytes: String });
    fs.writeFileSync(path.join(repoRoot(), 'test', 'fixtures', 'workflow-histories', 'job-execution-pull-workflow-node-lost.json'), JSON.stringify(history));
  }
});

test('the node back READY after a LOST verdict came too late: the same node is asked again, and its pull joined', async () => {
  let waits = 0;
  const record = await run('back', async () => {
    if (waits++ === 0) throw lostOn('a');
    return { digest };
  }, [{ do: 'retry' }]);
  expect(record.result).toEqual({ status: 'succeeded' });
  expect(record.calls.filter((call) => call.startsWith('await'))).toEqual(['await 127.0.0.1:5000/team/box:1 via my-registry for puller on a', 'await 127.0.0.1:5000/team/box:1 via my-registry for puller on a']);
});

test('a pull its registry refused fails the execution with its reason, without asking for a move', async () => {
  const record = await run('refused', async () => {
    throw ApplicationFailure.nonRetryable("image '127.0.0.1:5000/team/box:1' was not found in its registry", 'ImagePullError');
  }, []);
  expect(record.result.status).toBe('failed');
  expect(record.calls).toEqual(['await 127.0.0.1:5000/team/box:1 via my-registry for puller on a', 'finish failed']);
});
