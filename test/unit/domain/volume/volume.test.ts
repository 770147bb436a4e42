import { volumeUsageTicks } from '../../../../domain/volume/volume';

const key = { id: '7d1c1a52-4a0e-4a57-9f0a-2b8f4a1c9d10', workspace: 'ws', workspaceId: 'w-1', name: 'data' };

test('a volume is metered as its size in GB times the seconds of the period, starting at the period', () => {
  const ticks = volumeUsageTicks({ key, accountId: 'acc', from: 60_000, to: 120_000, sizeMb: 2048 });
  expect(ticks).toEqual([
    expect.objectContaining({ resourceType: 'volume', billingDimension: 'volume_storage_gbs', quantity: 120, resourceUuid: key.id, periodStart: new Date(60_000) }),
  ]);
});

test('an empty period records nothing, and quantities are rounded so a retry is identical', () => {
  expect(volumeUsageTicks({ key, accountId: 'acc', from: 5_000, to: 5_000, sizeMb: 16 })).toEqual([]);
  expect(volumeUsageTicks({ key, accountId: 'acc', from: 0, to: 1_000, sizeMb: 1 })[0].quantity).toBe(0.000977);
});
