import { ApplicationFailure } from '@temporalio/activity';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { SandboxKey, SandboxSpec } from '../../../domain/sandbox/sandbox';
import type { SandboxLifecycleInput } from '../../../workflows/sandbox-lifecycle';
import { SandboxNodeModel } from '../../fakes/sandbox-node-model';
import { finished, oneNodePlacement, perWorkflowActivities, SetAsideServers, startTimeSkippingWorker } from '../../helpers/time-skipping';

/**
 * A network policy PUT on a running sandbox, pushed to its node by the lifecycle workflow: while
 * the node does not take it, the push goes on (a Warning event once, a Normal one when it
 * applies), the newest policy is the one applied, the sandbox can still be deleted, and a policy
 * the node refuses for good ends the push. Temporal's time-skipping server against an in-memory
 * node whose policy activity fails as long as the test says the node is unreachable.
 */
jest.setTimeout(120_000);

const TASK_QUEUE = 'sandbox-network-push';
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

let env: TestWorkflowEnvironment;
let stop: () => Promise<void>;
const setAside = new SetAsideServers();
const activitiesOf = new Map<string, Record<string, (...args: unknown[]) => Promise<unknown>>>();
const ACTIVITIES = [
  'startSandbox', 'enterStandby', 'freezeState', 'measureSandbox', 'stopSandbox', 'markSandboxFailed', 'markSandboxDeleting',
  'deleteSandboxRecord', 'setSandboxState', 'recordSandboxUsage', 'noteSandboxEvent', 'updateSandboxNetwork',
];

beforeAll(async () => {
  ({ env, stop } = await startTimeSkippingWorker(TASK_QUEUE, { ...perWorkflowActivities(ACTIVITIES, activitiesOf), ...oneNodePlacement(TASK_QUEUE) }));
}, 120_000);

afterAll(async () => {
  await setAside.closeAll();
  await stop?.();
}, 60_000);

/** A running sandbox whose node takes policies only while `node.reachable` (or refuses them for good with `node.refuse`). */
async function startSandbox(workflowId: string) {
  const model = new SandboxNodeModel(() => env.currentTimeMs(), async () => 'answer');
  const node = { reachable: false, refuse: undefined as string | undefined, applied: [] as unknown[], calls: 0 };
  const events: string[] = [];
  activitiesOf.set(workflowId, {
    ...model.nodeActivities(),
    ...model.controlActivities(),
    noteSandboxEvent: async (_key: SandboxKey, type: string, message: string) => void events.push(`${type}: ${message}`),
    updateSandboxNetwork: async (_key: SandboxKey, spec: SandboxSpec) => {
      node.calls++;
      if (node.refuse) throw ApplicationFailure.nonRetryable(node.refuse, 'SandboxNotFoundError');
      if (!node.reachable) throw new Error('the node worker is unreachable');
      node.applied.push(spec.network);
    },
  } as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>);
  const key = { id: workflowId, workspace: 'ws', workspaceId: 'ws-id', name: workflowId };
  const spec: SandboxSpec = { network: { allowedDomains: ['a.example'] } };
  const input: SandboxLifecycleInput = { key, spec, nodeQueue: TASK_QUEUE, idleTimeoutMs: 24 * HOUR, createdAt: await env.currentTimeMs(), phase: 'create' };
  const handle = await env.client.workflow.start('sandboxLifecycle', { taskQueue: TASK_QUEUE, workflowId, args: [input] });
  const put = (allowed: string) => handle.signal('spec', { network: { allowedDomains: [allowed] } });
  return { model, node, events, handle, put };
}

const PENDING = /^Warning: network policy not applied yet: the node has not taken it \(the node worker is unreachable\); retrying until it does$/;

test('a policy the node does not take is pushed until it does: one Warning while pending, a Normal once applied', async () => {
  const { node, events, handle, put } = await startSandbox('push-until-applied');
  await put('b.example');
  await env.sleep(10 * MINUTE);
  expect(node.applied).toEqual([]);
  expect(node.calls).toBeGreaterThan(10);
  expect(events).toHaveLength(1);
  expect(events[0]).toMatch(PENDING);
  node.reachable = true;
  await env.sleep(MINUTE);
  expect(node.applied).toEqual([{ allowedDomains: ['b.example'] }]);
  expect(events).toEqual([expect.stringMatching(PENDING), 'Normal: network policy applied on the node']);
  await handle.signal('delete');
  await finished(env, 'push-until-applied', setAside);
});

test('a policy PUT while another is pending replaces it: the newest is applied', async () => {
  const { node, handle, put } = await startSandbox('push-newest');
  await put('b.example');
  await env.sleep(2 * MINUTE);
  await put('c.example');
  await env.sleep(2 * MINUTE);
  node.reachable = true;
  await env.sleep(MINUTE);
  expect(node.applied.at(-1)).toEqual({ allowedDomains: ['c.example'] });
  expect(node.applied).not.toContainEqual({ allowedDomains: ['b.example'] });
  await handle.signal('delete');
  await finished(env, 'push-newest', setAside);
});

test('a sandbox with a pending policy can be deleted', async () => {
  const { model, node, handle, put } = await startSandbox('push-then-delete');
  await put('b.example');
  await env.sleep(5 * MINUTE);
  await handle.signal('delete');
  await finished(env, 'push-then-delete', setAside);
  expect(model.stopped).toBe(true);
  expect(node.applied).toEqual([]);
});

test('a policy the node refuses for good is not pushed again; a Warning says why', async () => {
  const { node, events, handle, put } = await startSandbox('push-refused');
  node.refuse = "sandbox 'push-refused' does not exist on this node";
  await put('b.example');
  await env.sleep(10 * MINUTE);
  expect(node.calls).toBe(1);
  expect(events).toEqual(["Warning: network policy not applied: sandbox 'push-refused' does not exist on this node"]);
  await handle.signal('delete');
  await finished(env, 'push-refused', setAside);
});
