import fs from 'node:fs';
import type { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import { SandboxNetwork } from '../../../runtime/network/sandbox-network';
import type { SandboxHandle } from '../../../runtime/sandbox-runtime';
import { exec, runtimeDataDir, sandboxSpec, testRuntime } from '../../helpers/sandbox-runtime';
import { startTestInternet, testSandboxNetwork, type TestInternet } from '../../helpers/test-internet';

// Real sandboxes, namespaces and nftables on a busy 2-core machine: generous limits; no test asserts on time.
jest.setTimeout(90_000);

/**
 * Private destinations: a test host on a private address (a free /28 of 172.24.0.0/13, see
 * test-internet.ts) is refused to every sandbox until the operator opens its
 * block (HANGAR_SANDBOX_ALLOWED_PRIVATE_RANGES, here the network's allowedPrivateRanges, taken at
 * the node worker's start); the node's own address in that block stays refused.
 */
const dataDir = runtimeDataDir('private-ranges');
let internet: TestInternet;
let network: SandboxNetwork;
let runtime: BwrapRuntime;
let box: SandboxHandle;

const names = (): Record<string, string[]> => ({
  'mirror.test': [internet.hosts[0]],
  'node.test': [internet.hostSide],
  'metadata.test': ['169.254.169.254'],
});

beforeAll(async () => {
  internet = await startTestInternet(1, undefined, 'private');
  network = testSandboxNetwork(dataDir, names);
  await network.start();
  runtime = testRuntime(dataDir, { network, warmPool: 0 });
  box = await runtime.start(sandboxSpec({ network: {} }));
});

afterAll(async () => {
  for (const sandbox of (await runtime?.list()) ?? []) await runtime.remove(sandbox.id);
  await runtime?.close();
  await network?.tearDown();
  await internet?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const curl = async (args: string) => (await exec(box.socketPath, `curl -sS --max-time 20 ${args}`)).stdout;

/** The node worker starts again with the operator's settings changed (they are read at its start). */
async function restartNode(allowedPrivateRanges: string[]): Promise<void> {
  await runtime.close();
  await network.close();
  network = new SandboxNetwork({ ...network.options, allowedPrivateRanges });
  await network.start();
  runtime = testRuntime(dataDir, { network, warmPool: 0 });
}

test('a host on a private address is refused by default, by name and by address, through the proxy and transparently', async () => {
  const [mirror] = internet.hosts;
  const rule = /172\.16\.0\.0\/12 is a private range the operator has not opened to sandboxes/;
  expect(await curl('http://mirror.test/')).toMatch(rule);
  expect(await curl(`http://${mirror}/`)).toMatch(rule);
  expect(await curl(`--noproxy '*' http://${mirror}/`)).toMatch(rule);
  // The sandbox's own allow list naming it does not open it either: the operator decides.
  await runtime.updateNetwork(box.id, { allowedDomains: ['mirror.test', internet.block] });
  expect(await curl('http://mirror.test/')).toMatch(rule);
  await runtime.updateNetwork(box.id, {});
});

test("once the operator opens the host's block the sandbox reaches it; the node's own address and metadata stay refused", async () => {
  const [mirror] = internet.hosts;
  await restartNode([internet.block]);
  expect(JSON.parse(await curl('http://mirror.test/'))).toMatchObject({ local: mirror });
  expect(JSON.parse(await curl(`--noproxy '*' http://${mirror}/`))).toMatchObject({ local: mirror });
  expect(await curl('http://node.test/')).toMatch(new RegExp(`${internet.hostSide.replace(/\./g, '\\.')}/32 is never reachable from a sandbox`));
  expect(await curl('http://metadata.test/')).toMatch(/169\.254\.0\.0\/16 is never reachable from a sandbox/);
  // A sandbox's forbidden list still applies inside the opened block.
  await runtime.updateNetwork(box.id, { forbiddenDomains: [internet.block] });
  expect(await curl('http://mirror.test/')).toMatch(/forbiddenDomains entry/);
});
