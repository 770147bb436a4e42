import { randomUUID } from 'node:crypto';
import { StateHistory } from '../../../store/state-history';
import { createTenant, startTestApp, type TestApp, type TestTenant } from '../../helpers/platform';

let t: TestApp;
let tenant: TestTenant;
let history: StateHistory;

beforeAll(async () => {
  t = await startTestApp();
  tenant = await createTenant(t.app.pg, 'history');
  history = new StateHistory(t.app.pg);
});

afterAll(() => t.close());

async function intervals(uuid: string) {
  const { rows } = await t.app.pg.query<{ state: string; memory_mb: number; stored_bytes: string; started_at: Date; ended_at: Date | null; workspace: string; account_id: string }>(
    'SELECT state, memory_mb, stored_bytes, started_at, ended_at, workspace, account_id FROM resource_state_intervals WHERE resource_uuid = $1 ORDER BY started_at',
    [uuid],
  );
  return rows.map((r) => ({ state: r.state, memoryMb: r.memory_mb, storedBytes: Number(r.stored_bytes), from: r.started_at.getTime(), to: r.ended_at?.getTime() ?? null, workspace: r.workspace, account: r.account_id }));
}

test('intervals follow each other without gaps; retried writes change nothing and answer the time first recorded', async () => {
  const uuid = randomUUID();
  const resource = { workspaceId: tenant.workspaceId, resourceType: 'sandbox' as const, resourceUuid: uuid, resourceName: 'box' };
  const t0 = Date.UTC(2026, 0, 1);
  expect(await history.enter(resource, { state: 'RUNNING', memoryMb: 512, storedBytes: 0 }, t0)).toBe(t0);
  // A retried start, later: the resource has been running since t0.
  expect(await history.enter(resource, { state: 'RUNNING', memoryMb: 512, storedBytes: 0 }, t0 + 900)).toBe(t0);
  await history.changeState(uuid, 'STANDBY', t0 + 5_000);
  await history.changeState(uuid, 'STANDBY', t0 + 5_500);
  await history.changeState(uuid, 'RUNNING', t0 + 9_000);
  expect(await history.end(uuid, t0 + 12_000)).toBe(t0 + 12_000);
  // A retried deletion answers when the history ended.
  expect(await history.end(uuid, t0 + 13_000)).toBe(t0 + 12_000);
  const common = { memoryMb: 512, storedBytes: 0, workspace: tenant.workspace, account: tenant.accountId };
  expect(await intervals(uuid)).toEqual([
    { ...common, state: 'RUNNING', from: t0, to: t0 + 5_000 },
    { ...common, state: 'STANDBY', from: t0 + 5_000, to: t0 + 9_000 },
    { ...common, state: 'RUNNING', from: t0 + 9_000, to: t0 + 12_000 },
  ]);
});

test('new facts open a new interval; a write that arrives late never ends one before it began', async () => {
  const uuid = randomUUID();
  const volume = { workspaceId: tenant.workspaceId, resourceType: 'volume' as const, resourceUuid: uuid, resourceName: 'vol' };
  const t0 = Date.UTC(2026, 0, 2);
  await history.enter(volume, { state: 'DEPLOYED', memoryMb: 0, storedBytes: 2 ** 20 }, t0);
  await history.enter(volume, { state: 'DEPLOYED', memoryMb: 0, storedBytes: 2 ** 21 }, t0 + 4_000);
  expect(await history.enter(volume, { state: 'DEPLOYED', memoryMb: 0, storedBytes: 2 ** 22 }, t0 + 1_000)).toBe(t0 + 4_000);
  expect((await intervals(uuid)).map(({ storedBytes, from, to }) => [storedBytes, from - t0, to === null ? null : to - t0])).toEqual([
    [2 ** 20, 0, 4_000],
    [2 ** 21, 4_000, 4_000],
    [2 ** 22, 4_000, null],
  ]);
});
