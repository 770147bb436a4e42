import { meterEventId } from '../../../../domain/billing/metering';
import { sandboxUsageTicks } from '../../../../domain/sandbox/metering';

const key = { id: '1b6f7f5e-0000-4000-8000-000000000001', workspace: 'ws', workspaceId: 'ws_1', name: 'box' };
const GB = 1024 ** 3;

describe('sandbox usage ticks', () => {
  test('running: compute from the memory limit, image storage from the image size', () => {
    const ticks = sandboxUsageTicks({ key, accountId: 'acc', from: 0, to: 60_000, state: 'RUNNING', memoryMb: 2048, frozenBytes: GB, diskBytes: GB / 2 });
    expect(ticks.map((t) => [t.billingDimension, t.quantity])).toEqual([
      ['sandbox_compute_runtime_gbs', 120],
      ['sandbox_image_storage_gbs', 30],
    ]);
    expect(ticks[0]).toEqual(expect.objectContaining({ resourceType: 'sandbox', resourceName: 'box', resourceUuid: key.id, workspace: 'ws', periodStart: new Date(0) }));
  });

  test('standby: no compute, snapshot storage from the frozen memory', () => {
    const ticks = sandboxUsageTicks({ key, accountId: 'acc', from: 0, to: 10_000, state: 'STANDBY', memoryMb: 2048, frozenBytes: GB / 4, diskBytes: 0 });
    expect(ticks.map((t) => [t.billingDimension, t.quantity])).toEqual([['sandbox_snapshot_storage_gbs', 2.5]]);
  });

  test('an empty period records nothing; the same period always gives the same event ids', () => {
    expect(sandboxUsageTicks({ key, accountId: 'acc', from: 5, to: 5, state: 'RUNNING', memoryMb: 1, frozenBytes: 0, diskBytes: 0 })).toEqual([]);
    const a = sandboxUsageTicks({ key, accountId: 'acc', from: 1_000, to: 2_000, state: 'RUNNING', memoryMb: 512, frozenBytes: 0, diskBytes: 0 });
    const b = sandboxUsageTicks({ key, accountId: 'acc', from: 1_000, to: 2_000, state: 'RUNNING', memoryMb: 512, frozenBytes: 0, diskBytes: 0 });
    expect(a.map(meterEventId)).toEqual(b.map(meterEventId));
  });
});
