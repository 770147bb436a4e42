import { snapshotStorageTicks } from '../../../../domain/sandbox/snapshot-metering';

const key = { id: '8d7c1f9e-0000-4000-8000-000000000001', workspace: 'w', workspaceId: 'ws-w', name: 'snap' };

test("a snapshot's files are billed in GB-seconds under its sandbox's name, with its own id", () => {
  const ticks = snapshotStorageTicks({ key, accountId: 'acc', sourceName: 'box', from: 0, to: 90_000, sizeBytes: 2 * 1024 ** 3 });
  expect(ticks).toEqual([
    {
      accountId: 'acc',
      workspace: 'w',
      resourceType: 'sandbox',
      resourceName: 'box',
      resourceUuid: key.id,
      billingDimension: 'sandbox_snapshot_storage_gbs',
      quantity: 180,
      periodStart: new Date(0),
    },
  ]);
});

test('an empty period or empty files bill nothing', () => {
  expect(snapshotStorageTicks({ key, accountId: 'acc', sourceName: 'box', from: 5, to: 5, sizeBytes: 1024 })).toEqual([]);
  expect(snapshotStorageTicks({ key, accountId: 'acc', sourceName: 'box', from: 0, to: 60_000, sizeBytes: 0 })).toEqual([]);
});
