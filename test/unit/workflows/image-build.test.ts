import { ApplicationFailure, Context } from '@temporalio/activity';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startTimeSkippingWorker } from '../../helpers/time-skipping';
import type { ImageBuildInput } from '../../../workflows/image-build';

/**
 * The image build workflow's decisions against activities of the test's own: a build's outcome
 * recorded on its record (READY with the digest, FAILED with the node's reason, not Temporal's
 * wrapper), a node failure retried, a removal that builds nothing. No workflow is cached, so every
 * task replays the history, as after a worker's restart.
 */
jest.setTimeout(120_000);

const TASK_QUEUE = 'image-build-unit';
type Settled = { id: string; build: number; outcome: Record<string, unknown> };

let env: TestWorkflowEnvironment;
let stop: () => Promise<void>;
/** Per workflow: what its build activity does, and what the workflow recorded and removed. */
const scripts = new Map<string, { build: (attempt: number) => Promise<{ digest: string; sizeBytes: number }>; settled: Settled[]; removed: string[] }>();
const script = () => scripts.get(Context.current().info.workflowExecution?.workflowId ?? '')!;

beforeAll(async () => {
  ({ env, stop } = await startTimeSkippingWorker(TASK_QUEUE, {
    buildWorkspaceImage: async () => script().build(Context.current().info.attempt),
    removeWorkspaceImage: async (key: { id: string }) => void script().removed.push(key.id),
    settleImageBuild: async (id: string, build: number, outcome: Record<string, unknown>) => void script().settled.push({ id, build, outcome }),
  }));
}, 120_000);

afterAll(async () => stop?.(), 60_000);

async function run(workflowId: string, phase: ImageBuildInput['phase'], build: (attempt: number) => Promise<{ digest: string; sizeBytes: number }>) {
  const record = { build, settled: [] as Settled[], removed: [] as string[] };
  scripts.set(workflowId, record);
  const input: ImageBuildInput = { key: { id: `id-${workflowId}`, workspace: 'ws', workspaceId: 'ws-id', name: 'app', tag: '1' }, nodeQueue: TASK_QUEUE, phase };
  await env.client.workflow.execute('imageBuild', { taskQueue: TASK_QUEUE, workflowId, args: [input] });
  return record;
}

const digest = `sha256:${'a'.repeat(64)}`;

test('a build that succeeds, after a node failure retried, is recorded READY with its digest and size', async () => {
  const record = await run('ok', { kind: 'build', build: 3, contextSha256: 'c'.repeat(64) }, async (attempt) => {
    if (attempt === 1) throw new Error('the node worker lost its buildah');
    return { digest, sizeBytes: 1234 };
  });
  expect(record.settled).toEqual([{ id: 'id-ok', build: 3, outcome: { state: 'READY', digest, sizeBytes: 1234 } }]);
  expect(record.removed).toEqual([]);
});

test("a build the node refuses is recorded FAILED with the node's reason, at once", async () => {
  let attempts = 0;
  const record = await run('refused', { kind: 'build', build: 1, contextSha256: 'c'.repeat(64) }, async () => {
    attempts++;
    throw ApplicationFailure.nonRetryable('Error: building at STEP "RUN exit 3": exit status 3', 'BuildahError');
  });
  expect(attempts).toBe(1);
  expect(record.settled).toEqual([{ id: 'id-refused', build: 1, outcome: { state: 'FAILED', reason: 'Error: building at STEP "RUN exit 3": exit status 3' } }]);
});

test('a removal forgets the tag on the node and builds nothing', async () => {
  const record = await run('removal', { kind: 'delete' }, async () => {
    throw new Error('a removal must not build');
  });
  expect(record.removed).toEqual(['id-removal']);
  expect(record.settled).toEqual([]);
});
