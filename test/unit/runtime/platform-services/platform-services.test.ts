import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { Pool } from 'pg';
import { workloadPlatformToken } from '../../../../domain/workloads/platform-credential';
import { PlatformServices, type PlatformPolicy } from '../../../../runtime/platform-services/platform-services';
import { sandboxLayout } from '../../../../runtime/layout';
import { NO_PLATFORM_EGRESS } from '../../../../runtime/platform-services/egress';

// The platform socket's own life: where it is bound, by whom, and its removal. (What it serves is
// tested end to end with deployed workloads.)

// Deep enough that the socket's full path is over the 107 bytes a socket address holds.
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `hangar-platform-${'d'.repeat(60)}-`));
const sandboxId = 'wl-88a29fa5-b905-46ed-af60-39366dbbd790-r1';
const layout = sandboxLayout(dataDir, sandboxId);
const policy: PlatformPolicy = { sandboxId, workspaceId: 'ws', resourceId: 'r', kind: 'agents', egress: NO_PLATFORM_EGRESS };
// Nothing here reaches the thread store: requests are refused before any query.
const services = new PlatformServices({ dataDir, masterKey: Buffer.alloc(32, 7), pg: {} as Pool });

beforeAll(() => fs.mkdirSync(layout.platformDir, { recursive: true }));
afterAll(async () => {
  await services.closeAll();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** Status of a request through a short hard link to the socket (the host's own path is too long to connect to). */
async function statusThrough(socket: string, requestPath = '/v1/threads/t/messages', headers: Record<string, string> = {}): Promise<number> {
  const short = path.join(os.tmpdir(), `hangar-ps-${process.pid}.sock`);
  fs.rmSync(short, { force: true });
  fs.linkSync(socket, short);
  try {
    return await new Promise((resolve, reject) => {
      http.get({ socketPath: short, path: requestPath, headers }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).on('error', reject);
    });
  } finally {
    fs.rmSync(short, { force: true });
  }
}

test('a socket path longer than a socket address holds is served, world-connectable, and two opens at once both succeed', async () => {
  expect(layout.platformSocket.length).toBeGreaterThan(107);
  await Promise.all([services.open(policy), services.open(policy)]);
  expect(fs.readdirSync(layout.platformDir)).toEqual(['platform.sock']);
  expect(fs.statSync(layout.platformSocket).mode & 0o777).toBe(0o666);
  // Without the deployment's credential: refused, by this listener.
  expect(await statusThrough(layout.platformSocket)).toBe(401);
  // With it, a thread id with a broken %-escape is the caller's mistake.
  const authorization = `Bearer ${workloadPlatformToken(Buffer.alloc(32, 7), sandboxId)}`;
  expect(await statusThrough(layout.platformSocket, '/v1/threads/%E0%A4%A/messages', { authorization })).toBe(400);
});

test('closing removes the socket and the policy; a worker restart restores only open ones', async () => {
  await services.close(sandboxId);
  expect(fs.readdirSync(layout.platformDir)).toEqual([]);
  const restarted = new PlatformServices({ dataDir, masterKey: Buffer.alloc(32, 7), pg: {} as Pool });
  await restarted.restore();
  expect(fs.readdirSync(layout.platformDir)).toEqual([]);

  await services.open(policy);
  await services.closeAll();
  // The worker stopped, the policy stayed: the next worker serves the socket again.
  await restarted.restore();
  expect(await statusThrough(layout.platformSocket)).toBe(401);
  await restarted.closeAll();
});

test("a policy an earlier worker left with egress as a list of origins is served as the providers' egress", async () => {
  const provider = http.createServer((_req, res) => res.end('provider'));
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  const port = (provider.address() as { port: number }).port;
  try {
    fs.writeFileSync(path.join(layout.root, 'platform-policy.json'), JSON.stringify({ ...policy, egress: [`http://127.0.0.1:${port}`] }));
    const restarted = new PlatformServices({ dataDir, masterKey: Buffer.alloc(32, 7), pg: {} as Pool });
    await restarted.restore();
    expect(await statusThrough(layout.platformSocket, `http://127.0.0.1:${port}/token`)).toBe(200);
    expect(await statusThrough(layout.platformSocket, `http://127.0.0.1:${port + 1}/token`)).toBe(403);
    expect(await statusThrough(layout.platformSocket, `http://localhost:${port}/token`)).toBe(403);
    await restarted.closeAll();
  } finally {
    provider.close();
  }
});
