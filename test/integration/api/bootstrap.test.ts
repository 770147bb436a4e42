import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bootstrap } from '../../../store/bootstrap';
import { startTestApp, type TestApp } from '../../helpers/platform';

let t: TestApp;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'hangar-bootstrap-'));
  t = await startTestApp({ dataDir });
});
afterAll(async () => {
  await t.close();
  rmSync(dataDir, { recursive: true, force: true });
});

test('first start creates an account, a default workspace and an account-admin key, written 0600; later starts reuse them', async () => {
  const first = await bootstrap(t.app.pg, t.config);
  const file = path.join(dataDir, 'credentials.json');
  expect(statSync(file).mode & 0o777).toBe(0o600);
  expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(first);
  expect(first).toEqual({
    baseUrl: t.config.baseUrl,
    runUrl: t.config.runUrl,
    accountId: expect.stringMatching(/^acc_/),
    workspace: expect.stringMatching(/^default/),
    apiKey: expect.stringMatching(/^hgr_/),
  });

  const accounts = await t.call(first.apiKey, { method: 'GET', url: '/v0/accounts' });
  expect(accounts.json()).toEqual([expect.objectContaining({ id: first.accountId, role: 'admin' })]);
  const workspaces = await t.call(first.apiKey, { method: 'GET', url: '/v0/workspaces' });
  expect(workspaces.json().map((w: { name: string }) => w.name)).toEqual([first.workspace]);

  const again = await bootstrap(t.app.pg, t.config);
  expect(again).toEqual(first);
  const count = await t.app.pg.query('SELECT count(*)::int AS n FROM accounts WHERE id = $1', [first.accountId]);
  expect(count.rows[0].n).toBe(1);
});
