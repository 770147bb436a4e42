import { ApplicationFailure } from '@temporalio/activity';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DeploymentNodeModel } from '../../fakes/deployment-node-model';
import { SandboxNodeModel } from '../../fakes/sandbox-node-model';
import { VolumeNodeModel } from '../../fakes/volume-node-model';
import { finished, oneNodePlacement, perWorkflowActivities, SetAsideServers, startTimeSkippingWorker } from '../../helpers/time-skipping';
import { METER_INTERVAL_MS } from '../../../domain/billing/meter-schedule';
import type { DeploymentInput } from '../../../workflows/deployment';
import type { SandboxLifecycleInput } from '../../../workflows/sandbox-lifecycle';
import type { VolumeLifecycleInput } from '../../../workflows/volume-lifecycle';
import type { SnapshotLifecycleInput } from '../../../workflows/snapshot-lifecycle';

/**
 * The deadlines of the lifecycle workflows, each path on its own: a sandbox frozen when idle and
 * deleted when a ttl or an idle policy expires, a deployment scaled to zero when idle and woken
 * again, a volume metered once an interval and grown. They run on Temporal's time-skipping test
 * server against in-memory nodes, so hours of idling take milliseconds. The worker keeps no
 * workflow in its cache: every workflow task replays the history, as after a restart. The
 * interleaving tests (test/unit/workflows/*-interleavings.test.ts) run the same paths under generated
 * schedules; these pin each path's outcome.
 */

// Hours of workflow time take real seconds of workflow tasks (each replayed in full) on a busy machine.
jest.setTimeout(120_000);

const TASK_QUEUE = 'lifecycle-deadlines';
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

let env: TestWorkflowEnvironment;
let stop: () => Promise<void>;
const setAside = new SetAsideServers();
/** Each workflow's activities, by its workflow id. */
const activitiesOf = new Map<string, Record<string, (...args: unknown[]) => Promise<unknown>>>();
const ACTIVITIES = [
  // sandbox
  'startSandbox', 'enterStandby', 'freezeState', 'measureSandbox', 'stopSandbox', 'restoreSandbox', 'markSandboxFailed', 'markSandboxRestoreFailed', 'markSandboxDeleting', 'deleteSandboxRecord', 'setSandboxState', 'recordSandboxUsage',
  // deployment
  'unpackBundle', 'prepareBuiltin', 'startRevision', 'wakeRevision', 'removeRevision', 'loadRevision', 'markRevisionProgress', 'markRevisionDeployed', 'markScale', 'markRevisionFailed', 'recordWorkloadState', 'recordWorkloadUsage',
  // volume
  'createVolumeStorage', 'growVolumeStorage', 'deleteVolumeStorage', 'markVolumeDeployed', 'markVolumeFailed', 'markVolumeDeleting', 'deleteVolumeRecord', 'recordVolumeUsage',
  // snapshot
  'captureSandboxFiles', 'removeSnapshotFiles', 'markSnapshotFailed', 'markSnapshotDeleting', 'deleteSnapshotRecord', 'recordSnapshotUsage',
];

beforeAll(async () => {
  ({ env, stop } = await startTimeSkippingWorker(TASK_QUEUE, { ...perWorkflowActivities(ACTIVITIES, activitiesOf), ...oneNodePlacement(TASK_QUEUE) }));
}, 120_000);

afterAll(async () => {
  await setAside.closeAll();
  await stop?.();
}, 60_000);

const now = () => env.currentTimeMs();
const handle = (workflowId: string) => env.client.workflow.getHandle(workflowId);

describe('sandbox lifecycle', () => {
  /** A sandbox on an in-memory node; `reasons` collects why the workflow deleted it. */
  async function startSandbox(workflowId: string, spec: SandboxLifecycleInput['spec'], idleTimeoutMs: number) {
    const node = new SandboxNodeModel(now, async () => 'answer');
    const reasons: string[] = [];
    const control = { ...node.controlActivities(), markSandboxDeleting: async (_key: unknown, why: string) => void reasons.push(why) };
    activitiesOf.set(workflowId, { ...node.nodeActivities(), ...control } as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>);
    const key = { id: workflowId, workspace: 'ws', workspaceId: 'ws-id', name: workflowId };
    const input: SandboxLifecycleInput = { key, spec, nodeQueue: TASK_QUEUE, idleTimeoutMs, createdAt: await now(), phase: 'create' };
    await env.client.workflow.start('sandboxLifecycle', { taskQueue: TASK_QUEUE, workflowId, args: [input] });
    return { node, reasons, createdAt: input.createdAt };
  }

  test('an idle sandbox is frozen into STANDBY after its idle period, and metered as such', async () => {
    const { node } = await startSandbox('sandbox-idle', {}, 5 * MINUTE);
    await env.sleep(4 * MINUTE);
    expect(node.nodeState()).toBe('RUNNING');
    await env.sleep(2 * MINUTE);
    expect(node.nodeState()).toBe('STANDBY');
    await env.sleep(3 * MINUTE);
    expect((await handle('sandbox-idle').query<{ state: string }>('state')).state).toBe('STANDBY');
    expect(node.reportedStates.at(-1)).toBe('STANDBY');
    await handle('sandbox-idle').signal('delete');
    await finished(env, 'sandbox-idle', setAside);
    expect(node.meteringProblems()).toEqual([]);
    expect([...node.usage.values()].map((period) => period.state)).toContain('STANDBY');
  });

  test('a sandbox in standby restored to a snapshot runs again, metered as running from the restore, and freezes again when idle', async () => {
    const { node } = await startSandbox('sandbox-restore', {}, 5 * MINUTE);
    await env.sleep(7 * MINUTE);
    expect(node.nodeState()).toBe('STANDBY');
    await handle('sandbox-restore').signal('restore', { snapshotId: 'snap', snapshotName: 'snap', restoreId: 'restore-1' });
    await env.sleep(MINUTE);
    expect(node.nodeState()).toBe('RUNNING');
    expect((await handle('sandbox-restore').query<{ state: string }>('state')).state).toBe('RUNNING');
    await env.sleep(6 * MINUTE);
    expect(node.nodeState()).toBe('STANDBY');
    await handle('sandbox-restore').signal('delete');
    await finished(env, 'sandbox-restore', setAside);
    expect(node.meteringProblems()).toEqual([]);
    expect(node.history.map((change) => change.state)).toEqual(['RUNNING', 'STANDBY', 'RUNNING', 'STANDBY', 'STOPPED']);
  });

  test('a restore that cannot start the sandbox again leaves it FAILED with the reason, billed up to the failure and no further', async () => {
    const { node } = await startSandbox('sandbox-restore-failed', {}, HOUR);
    const failures: string[] = [];
    let failedAt = 0;
    const activities = activitiesOf.get('sandbox-restore-failed')!;
    activities.restoreSandbox = async () => {
      failedAt = await now();
      throw ApplicationFailure.nonRetryable('sandbox did not start: its agent exited', 'SandboxStartError');
    };
    activities.markSandboxRestoreFailed = async (_key: unknown, message: unknown) => void failures.push(message as string);
    await env.sleep(3 * MINUTE);
    await handle('sandbox-restore-failed').signal('restore', { snapshotId: 'snap', snapshotName: 'snap', restoreId: 'restore-1' });
    await env.sleep(5 * MINUTE);
    expect(failures).toEqual(["restore to snapshot 'snap' failed: sandbox did not start: its agent exited"]);
    await handle('sandbox-restore-failed').signal('delete');
    await finished(env, 'sandbox-restore-failed', setAside);
    expect(node.stopped).toBe(true);
    const periods = [...node.usage.values()].sort((a, b) => a.from - b.from);
    expect(periods.at(-1)!.to - failedAt).toBeGreaterThanOrEqual(0);
    expect(periods.at(-1)!.to - failedAt).toBeLessThan(MINUTE);
    periods.forEach((period, i) => i > 0 && expect(period.from).toBe(periods[i - 1].to));
  });

  test('a sandbox past its ttl is deleted, with the reason, and metered up to its removal', async () => {
    const { node, reasons, createdAt } = await startSandbox('sandbox-ttl', { runtime: { ttl: '10m' } }, 24 * HOUR);
    await env.sleep(9 * MINUTE);
    expect(node.stopped).toBe(false);
    await env.sleep(6 * MINUTE);
    await finished(env, 'sandbox-ttl', setAside);
    expect(reasons).toEqual(['expired: ttl 10m reached']);
    expect(node.stopped).toBe(true);
    expect(node.history.at(-1)!.at).toBeGreaterThanOrEqual(createdAt + 10 * MINUTE);
    expect(node.meteringProblems()).toEqual([]);
  });

  test('an idle expiration policy counts from the last use: a touch puts it off', async () => {
    const policies = [{ type: 'ttl-idle' as const, value: '5m', action: 'delete' as const }];
    const { node, reasons } = await startSandbox('sandbox-ttl-idle', { lifecycle: { expirationPolicies: policies } }, 24 * HOUR);
    await env.sleep(3 * MINUTE);
    await handle('sandbox-ttl-idle').signal('touch', await now());
    // Five minutes after the start, but only three after the touch.
    await env.sleep(3 * MINUTE);
    expect(node.stopped).toBe(false);
    await env.sleep(4 * MINUTE);
    await finished(env, 'sandbox-ttl-idle', setAside);
    expect(reasons).toEqual(['expired: idle for 5m']);
    expect(node.meteringProblems()).toEqual([]);
  });
});

describe('deployment', () => {
  test('an idle revision that scales to zero is stopped after its idle period, and a wake starts it again', async () => {
    const workflowId = 'deployment-idle';
    const node = new DeploymentNodeModel({ id: workflowId, workspace: 'ws', workspaceId: 'ws-id', kind: 'functions', name: workflowId }, now, async () => 'answer');
    activitiesOf.set(workflowId, { ...node.nodeActivities(), ...node.controlActivities() } as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>);
    const input: DeploymentInput = { key: node.key, nodeQueue: TASK_QUEUE, idleTimeoutMs: 5 * MINUTE };
    await env.client.workflow.start('deployment', { taskQueue: TASK_QUEUE, workflowId, args: [input] });
    await handle(workflowId).signal('revision', 1);
    await env.sleep(MINUTE);
    expect(node.reportedScale).toBe('RUNNING');
    expect(node.processes.size).toBe(1);
    await env.sleep(5 * MINUTE);
    expect(node.reportedScale).toBe('SCALED_TO_ZERO');
    expect(node.processes.size).toBe(0);
    // While at zero nothing runs: compute is metered at 0 MB.
    await env.sleep(2 * MINUTE);
    expect([...node.usage.values()].at(-1)!.memoryMb).toBe(0);

    const socketPath = await handle(workflowId).executeUpdate<string, []>('wake');
    expect(node.reaches(socketPath)).toBe(true);
    expect(node.reportedScale).toBe('RUNNING');
    await handle(workflowId).signal('delete');
    await finished(env, workflowId, setAside);
    expect(node.processes.size).toBe(0);
    expect(node.problems).toEqual([]);
  });
});

describe('volume lifecycle', () => {
  async function startVolume(workflowId: string, duringGrow?: (sizeMb: number) => Promise<void>) {
    const node = new VolumeNodeModel(now, duringGrow);
    activitiesOf.set(workflowId, { ...node.nodeActivities(), ...node.controlActivities() } as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>);
    const key = { id: workflowId, workspace: 'ws', workspaceId: 'ws-id', name: workflowId };
    const input: VolumeLifecycleInput = { key, sizeMb: 64, nodeQueue: TASK_QUEUE, phase: 'create' };
    await env.client.workflow.start('volumeLifecycle', { taskQueue: TASK_QUEUE, workflowId, args: [input] });
    return node;
  }

  test('a volume is metered once an interval while it exists, at each size it had, up to its deletion', async () => {
    const node = await startVolume('volume-metered');
    await env.sleep(10 * MINUTE);
    // Once an interval: ten minutes make (about) ten periods, one after the other.
    expect(node.usage.size).toBeGreaterThanOrEqual(10 * MINUTE / METER_INTERVAL_MS - 1);
    await handle('volume-metered').signal('resize', 128);
    await env.sleep(3 * MINUTE);
    expect(node.storageMb).toBe(128);
    await handle('volume-metered').signal('delete');
    await finished(env, 'volume-metered', setAside);
    expect(node.storageMb).toBeUndefined();
    expect(node.recordDeleted).toBe(true);
    expect(node.meteringProblems()).toEqual([]);
    expect(new Set([...node.usage.values()].map((period) => period.sizeMb))).toEqual(new Set([64, 128]));
  });

  test('a resize asked for while the volume grows is grown too: the storage and the metered size end at the larger', async () => {
    let asked = false;
    const node = await startVolume('volume-resize-during-grow', async () => {
      if (asked) return;
      asked = true;
      await handle('volume-resize-during-grow').signal('resize', 256);
    });
    await env.sleep(MINUTE);
    await handle('volume-resize-during-grow').signal('resize', 128);
    await env.sleep(3 * MINUTE);
    expect(node.storageMb).toBe(256);
    await handle('volume-resize-during-grow').signal('delete');
    await finished(env, 'volume-resize-during-grow', setAside);
    expect(node.meteringProblems()).toEqual([]);
  });
});

describe('snapshot lifecycle', () => {
  /** A snapshot whose capture ends at `capturedAt` (or fails), and the periods its storage was billed for. */
  async function startSnapshot(workflowId: string, capture: 'ready' | 'failed') {
    const seen = { capturedAt: 0, removedAt: 0, periods: [] as { from: number; to: number }[], failed: false };
    activitiesOf.set(workflowId, {
      captureSandboxFiles: async () => {
        if (capture === 'failed') throw new Error('the sandbox has no files on this node');
        seen.capturedAt = await now();
      },
      markSnapshotFailed: async () => void (seen.failed = true),
      recordSnapshotUsage: async (_key: unknown, from: unknown, to: unknown) => void seen.periods.push({ from: from as number, to: to as number }),
      markSnapshotDeleting: async () => undefined,
      removeSnapshotFiles: async () => void (seen.removedAt = await now()),
      deleteSnapshotRecord: async () => undefined,
    });
    const key = { id: workflowId, workspace: 'ws', workspaceId: 'ws-id', name: workflowId };
    const input: SnapshotLifecycleInput = { key, sourceId: 'source', nodeQueue: TASK_QUEUE, phase: 'create' };
    await env.client.workflow.start('snapshotLifecycle', { taskQueue: TASK_QUEUE, workflowId, args: [input], retry: { maximumAttempts: 1 } });
    return seen;
  }

  test("a ready snapshot's storage is billed once an interval, period after period, from its capture to its deletion", async () => {
    const seen = await startSnapshot('snapshot-metered', 'ready');
    await env.sleep(5 * MINUTE + 20_000);
    await handle('snapshot-metered').signal('delete');
    await finished(env, 'snapshot-metered', setAside);
    expect(seen.periods.length).toBeGreaterThanOrEqual(5);
    // Each a timer's interval (plus the recording's own moment), one after the other.
    for (const period of seen.periods.slice(0, -1)) expect([period.to - period.from >= METER_INTERVAL_MS, period.to - period.from < 2 * METER_INTERVAL_MS]).toEqual([true, true]);
    seen.periods.forEach((period, i) => i > 0 && expect(period.from).toBe(seen.periods[i - 1].to));
    // Workflow time starts at the task after the capture answered: the first period starts there, the last ends before the files go.
    expect(seen.periods[0].from - seen.capturedAt).toBeGreaterThanOrEqual(0);
    expect(seen.periods[0].from - seen.capturedAt).toBeLessThan(METER_INTERVAL_MS);
    expect(seen.periods.at(-1)!.to).toBeLessThanOrEqual(seen.removedAt);
    expect(seen.periods.at(-1)!.to - seen.periods[0].from).toBeGreaterThanOrEqual(5 * MINUTE);
  });

  test('a failed capture bills nothing', async () => {
    const seen = await startSnapshot('snapshot-failed', 'failed');
    await env.sleep(3 * MINUTE);
    await handle('snapshot-failed').signal('delete');
    await finished(env, 'snapshot-failed', setAside);
    expect(seen.failed).toBe(true);
    expect(seen.periods).toEqual([]);
  });
});
