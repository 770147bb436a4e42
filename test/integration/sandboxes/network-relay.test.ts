import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { SandboxNetwork } from '../../../runtime/network/sandbox-network';
import { runtimeDataDir } from '../../helpers/sandbox-runtime';
import { startTestInternet, testSandboxNetwork, type TestInternet } from '../../helpers/test-internet';

jest.setTimeout(60_000);

// The egress proxy's relay moving bulk bytes, from a sandbox's namespace (curl entered into it,
// no sandbox needed) to the test internet's web server: every byte arrives, whether the server
// keeps the connection or closes it right after the body, and with a client reading slower than
// the server sends (the relay then stops reading until the client drains).
const dataDir = runtimeDataDir('network-relay');
let internet: TestInternet;
let network: SandboxNetwork;
let netnsPath: string;
const SANDBOX = 'relay-test';

beforeAll(async () => {
  internet = await startTestInternet(1);
  const [host] = internet.hosts;
  network = testSandboxNetwork(dataDir, () => ({ 'files.test': [host] }));
  await network.start();
  ({ netnsPath } = await network.attach(SANDBOX, { allowedDomains: ['files.test'] }));
});

afterAll(async () => {
  await network?.tearDown();
  await internet?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/**
 * Downloads /bytes/<bytes> from the namespace through the proxy (port 80, Host files.test);
 * answers what arrived. `stall`: curl's output goes through a pipe no one reads for a second, so
 * curl stops reading, its socket fills, and the relay must hold (and then stop reading) bytes.
 */
async function download(bytes: number, options: { http10?: boolean; stall?: boolean } = {}): Promise<{ size: number; misplaced: number; status: string }> {
  const output = path.join(dataDir, `download-${bytes}`);
  const url = `http://${internet.hosts[0]}/bytes/${bytes}`;
  // The status goes to stderr (curl's %{stderr}), the body to stdout, then to the file.
  const curl = `curl -sS -H 'Host: files.test' ${options.http10 ? '-0' : ''} -w '%{stderr}%{http_code}' ${url}`;
  const command = options.stall ? `${curl} | { sleep 1; cat >"$0"; }` : `${curl} >"$0"`;
  const status = (await promisify(execFile)('nsenter', [`--net=${netnsPath}`, 'sh', '-c', command, output])).stderr;
  const body = fs.readFileSync(output);
  fs.rmSync(output);
  // The server sends byte i as i % 251: any other is a relay's mistake (moved, mixed, overwritten).
  let misplaced = 0;
  for (let i = 0; i < body.length; i++) if (body[i] !== i % 251) misplaced++;
  return { size: body.length, misplaced, status };
}

test.each([
  ['a kept-alive connection', {}],
  ['a connection the server closes after the body (HTTP/1.0)', { http10: true }],
  ['a reader that stalls, on a kept-alive connection', { stall: true }],
  ['a reader that stalls, on a connection the server closes', { http10: true, stall: true }],
])('a download through the proxy arrives whole: %s', async (_case, options) => {
  const bytes = 12 * 1024 * 1024 + 12_345;
  const before = network.trafficOf(SANDBOX).bytesIn;
  expect(await download(bytes, options)).toEqual({ size: bytes, misplaced: 0, status: '200' });
  expect(network.trafficOf(SANDBOX).bytesIn - before).toBeGreaterThan(bytes);
});

test('small downloads on reused buffers do not mix: many in a row, each whole', async () => {
  for (const bytes of [1, 100, 16 * 1024, 16 * 1024 + 1, 70_000, 300_000]) {
    expect(await download(bytes)).toEqual({ size: bytes, misplaced: 0, status: '200' });
  }
});
