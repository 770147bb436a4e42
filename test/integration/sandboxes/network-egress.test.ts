import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type { BwrapRuntime } from '../../../runtime/bwrap-runtime';
import { SandboxNetwork, type SandboxAttachment } from '../../../runtime/network/sandbox-network';
import type { RuntimeSandboxSpec, SandboxHandle } from '../../../runtime/sandbox-runtime';
import type { SandboxRecord } from '../../../runtime/state-store';
import { exec, runtimeDataDir, sandboxSpec, shareSuiteImages, testRuntime, until } from '../../helpers/sandbox-runtime';
import { makeTestCertificates, startTestInternet, testSandboxNetwork, type TestInternet } from '../../helpers/test-internet';

// Real sandboxes, namespaces and nftables on a busy 2-core machine: generous limits; no test asserts on time.
jest.setTimeout(60_000);

// Sandboxes with outbound network, against a stand-in internet made of namespaces on this machine
// (test-internet.ts): the node resolves the test's names from a map, so no lookup or packet leaves.
const dataDir = runtimeDataDir('network');
let internet: TestInternet;
let network: SandboxNetwork;
let runtime: BwrapRuntime;
let caFile: string;
let allowed: string;
let forbidden: string;

const names = (): Record<string, string[] | string> => ({
  // Aliases (CNAMEs): one to a forbidden host, one to an allowed one.
  'alias.test': 'forbidden.test',
  'allowed-alias.test': 'www.allowed.test',
  'allowed.test': [allowed],
  'www.allowed.test': [allowed],
  'forbidden.test': [forbidden],
  'metadata.test': ['169.254.169.254'],
  'loopback.test': ['127.0.0.1'],
});

beforeAll(async () => {
  caFile = makeTestCertificates(path.join(dataDir, 'tls'), ['allowed.test', 'www.allowed.test', 'forbidden.test']);
  internet = await startTestInternet(2, path.join(dataDir, 'tls'));
  [allowed, forbidden] = internet.hosts;
  network = testSandboxNetwork(dataDir, names);
  await network.start();
  // A warm pool, as nodes have by default, on base-image (the suite's): sandboxes below, on it
  // too, mostly take over a warm one.
  shareSuiteImages(dataDir);
  runtime = testRuntime(dataDir, { network, warmPool: 1 });
  await runtime.prewarm();
});

afterAll(async () => {
  // Whatever beforeAll got to, undone.
  for (const sandbox of (await runtime?.list()) ?? []) await runtime.remove(sandbox.id);
  await runtime?.close();
  await network?.tearDown();
  await internet?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const started: SandboxHandle[] = [];
async function start(networkSpec: RuntimeSandboxSpec['network']): Promise<SandboxHandle> {
  const handle = await runtime.start(sandboxSpec({ image: 'base-image', network: networkSpec }));
  started.push(handle);
  return handle;
}

function recordOf(id: string): SandboxRecord {
  return JSON.parse(fs.readFileSync(runtime.layout(id).stateFile, 'utf8')) as SandboxRecord;
}

/** What the test web server answered, parsed; undefined when curl failed (its exit code and stderr are in `failure`). */
async function curl(sandbox: SandboxHandle, args: string) {
  const result = await exec(sandbox.socketPath, `curl -sS --max-time 20 ${args}`);
  let answer: { scheme: string; host: string; local: string } | undefined;
  try {
    answer = JSON.parse(result.stdout);
  } catch {
    answer = undefined;
  }
  return { answer, exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr };
}

/** Tries a TCP connection from inside the sandbox with Node; answers 'connected' or the error's code. */
async function tcpFrom(sandbox: SandboxHandle, host: string, port: number): Promise<string> {
  const script = `const s=require('net').connect(${port},'${host}');s.setTimeout(15000);s.on('connect',()=>{console.log('connected');s.destroy()});s.on('error',e=>console.log(e.code));s.on('timeout',()=>{console.log('TIMEOUT');s.destroy()})`;
  return (await exec(sandbox.socketPath, `node -e "${script}"`)).stdout.trim();
}

describe('an allow list', () => {
  let box: SandboxHandle;
  beforeAll(async () => {
    box = await start({ allowedDomains: ['allowed.test'], proxy: { allowedDomains: ['*.allowed.test'] } });
  });

  test('an allowed host answers by name: through the proxy variables, transparently on port 80, and over TLS on 443', async () => {
    const ca = fs.readFileSync(caFile).toString('base64');
    await exec(box.socketPath, `echo ${ca} | base64 -d > /tmp/ca.crt`);
    const viaProxy = await curl(box, 'http://allowed.test/x');
    expect(viaProxy.answer).toMatchObject({ scheme: 'http', host: 'allowed.test', local: allowed });
    const transparent = await curl(box, `--noproxy '*' http://www.allowed.test/`);
    expect(transparent.answer).toMatchObject({ scheme: 'http', host: 'www.allowed.test', local: allowed });
    const tlsTransparent = await curl(box, `--noproxy '*' --cacert /tmp/ca.crt https://allowed.test/`);
    expect(tlsTransparent.answer).toMatchObject({ scheme: 'https', host: 'allowed.test', local: allowed });
    const tlsConnect = await curl(box, `--cacert /tmp/ca.crt https://www.allowed.test/`);
    expect(tlsConnect.answer).toMatchObject({ scheme: 'https', host: 'www.allowed.test', local: allowed });
    // What went through the proxy is counted on the sandbox's status: at least the answers' bodies in, the requests out.
    const traffic = (await runtime.status(box.id))?.network;
    expect(traffic?.bytesIn).toBeGreaterThan(4 * JSON.stringify(tlsConnect.answer).length);
    expect(traffic?.bytesOut).toBeGreaterThan(4 * 'GET / HTTP/1.1\r\n'.length);
  });

  test('a host not on the list is refused by name (DNS and proxy) and by literal address, on 80 and 443', async () => {
    const byDns = await curl(box, `--noproxy '*' http://forbidden.test/`);
    expect(byDns.answer).toBeUndefined();
    expect(byDns.stderr).toMatch(/resolve/i);
    const byProxy = await curl(box, 'http://forbidden.test/');
    expect(byProxy.stdout).toMatch(/hangar egress refused forbidden\.test: not in spec\.network\.allowedDomains/);
    const byAddress = await curl(box, `--noproxy '*' http://${forbidden}/`);
    expect(byAddress.stdout).toMatch(new RegExp(`refused ${forbidden.replace(/\./g, '\\.')}: not in spec.network.allowedDomains`));
    const tlsByAddress = await curl(box, `--noproxy '*' -k https://${forbidden}/`);
    expect(tlsByAddress.answer).toBeUndefined();
    const connectByAddress = await curl(box, `-k https://${forbidden}/`);
    expect(connectByAddress.answer).toBeUndefined();
  });

  test("an allowed name sent to a forbidden address goes where the node resolves it, never to that address", async () => {
    const spoofed = await curl(box, `--noproxy '*' -H 'Host: allowed.test' http://${forbidden}/`);
    expect(spoofed.answer).toMatchObject({ host: 'allowed.test', local: allowed });
    const sni = await curl(box, `--noproxy '*' --cacert /tmp/ca.crt --resolve allowed.test:443:${forbidden} https://allowed.test/`);
    expect(sni.answer).toMatchObject({ host: 'allowed.test', local: allowed });
  });
});

describe('what is never reachable', () => {
  let box: SandboxHandle;
  let other: SandboxHandle;
  let nodeListener: net.Server;
  beforeAll(async () => {
    [box, other] = await Promise.all([start(undefined), start(undefined)]);
    nodeListener = net.createServer((socket) => socket.end('node secret\n'));
    await new Promise<void>((resolve) => nodeListener.listen(0, '0.0.0.0', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => (nodeListener ? nodeListener.close(() => resolve()) : resolve())));

  test('with no policy, the test hosts answer by name and address', async () => {
    expect((await curl(box, 'http://forbidden.test/')).answer).toMatchObject({ local: forbidden });
    expect((await curl(box, `--noproxy '*' http://${allowed}/`)).answer).toMatchObject({ local: allowed });
  });

  test('no listener of the node: not on the bridge address, not on its other addresses, not loopback', async () => {
    const port = (nodeListener.address() as net.AddressInfo).port;
    const gateway = network.plan.gateway;
    for (const host of [gateway, internet.hostSide]) expect(await tcpFrom(box, host, port)).toBe('ECONNREFUSED');
    // Port 80 of the node goes to the proxy, which refuses the node's own addresses.
    expect((await curl(box, `--noproxy '*' http://${gateway}/`)).stdout).toMatch(/never reachable from a sandbox/);
    expect((await curl(box, `--noproxy '*' http://${internet.hostSide}/`)).stdout).toMatch(/never reachable from a sandbox/);
    expect((await curl(box, 'http://loopback.test/')).stdout).toMatch(/127\.0\.0\.0\/8 is never reachable/);
  });

  test('no packet of a sandbox is forwarded: a test host the node can route to is unreachable on other ports', async () => {
    // The host end of the test internet is on this node, so only the node's rules keep the packet in.
    expect(await tcpFrom(box, allowed, 8080)).not.toBe('connected');
    expect((await curl(box, `--noproxy '*' http://${allowed}:8080/`)).answer).toBeUndefined();
    expect(await tcpFrom(box, '169.254.169.254', 81)).not.toBe('connected');
  });

  test('not the metadata address, by address or by a name resolving to it', async () => {
    expect((await curl(box, `--noproxy '*' http://169.254.169.254/latest/meta-data/`)).stdout).toMatch(/169\.254\.0\.0\/16 is never reachable/);
    expect((await curl(box, 'http://metadata.test/')).stdout).toMatch(/169\.254\.0\.0\/16 is never reachable/);
    expect((await curl(box, `--noproxy '*' http://metadata.test/`)).stderr).toMatch(/resolve/i);
  });

  test('not another sandbox, directly or through the proxy', async () => {
    await exec(other.socketPath, 'python3 -m http.server 8000 --bind 0.0.0.0 >/dev/null 2>&1 &');
    const otherAddress = recordOf(other.id).network!.address;
    // The server is up once the sandbox reaches it itself, on its own address.
    await until('the other sandbox\'s server', async () => (await tcpFrom(other, otherAddress, 8000)) === 'connected');
    expect(await tcpFrom(box, otherAddress, 8000)).not.toBe('connected');
    expect((await curl(box, `http://${otherAddress}:8000/`)).stdout).toMatch(/never reachable from a sandbox/);
  });
});

test('internet: false leaves only loopback', async () => {
  const box = await start({ internet: false });
  expect(recordOf(box.id).network).toBeUndefined();
  const interfaces = (await exec(box.socketPath, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")).stdout.split('\n').filter(Boolean);
  expect(interfaces).toEqual(['lo']);
  expect((await curl(box, `--noproxy '*' http://${allowed}/`)).answer).toBeUndefined();
});

test('a policy change applies to the next connection, without a restart', async () => {
  const box = await start({ forbiddenDomains: ['forbidden.test'] });
  const pid = box.pid;
  expect((await curl(box, 'http://forbidden.test/')).stdout).toMatch(/forbiddenDomains entry 'forbidden\.test'/);
  await runtime.updateNetwork(box.id, { forbiddenDomains: ['allowed.test'] });
  expect((await curl(box, 'http://forbidden.test/')).answer).toMatchObject({ local: forbidden });
  expect((await curl(box, `--noproxy '*' http://allowed.test/`)).answer).toBeUndefined();
  expect((await runtime.status(box.id))?.pid).toBe(pid);
  await expect(runtime.updateNetwork(box.id, { internet: false })).rejects.toThrow(/internet cannot change/);
});

test('a forbidden host stays forbidden behind an alias (CNAME) to it, by DNS and through the proxy', async () => {
  const box = await start({ forbiddenDomains: ['forbidden.test'] });
  expect((await curl(box, 'http://alias.test/')).stdout).toMatch(/alias\.test is an alias of forbidden\.test: spec\.network\.forbiddenDomains entry 'forbidden\.test'/);
  expect((await curl(box, `--noproxy '*' http://alias.test/`)).stderr).toMatch(/resolve/i);
  expect((await curl(box, `--noproxy '*' http://allowed-alias.test/`)).answer).toMatchObject({ host: 'allowed-alias.test', local: allowed });
});

test('a new node worker serves the running sandboxes again, with their policies', async () => {
  const box = await start({ allowedDomains: ['allowed.test'] });
  // The worker goes (its warm sandboxes with it, as a worker's close ends them); a new one starts.
  await runtime.close();
  await network.close();
  network = new SandboxNetwork(network.options);
  await network.start();
  runtime = testRuntime(dataDir, { network, warmPool: 1 });
  await runtime.prewarm();
  expect((await curl(box, 'http://allowed.test/')).answer).toMatchObject({ local: allowed });
  expect((await curl(box, 'http://forbidden.test/')).stdout).toMatch(/not in spec\.network\.allowedDomains/);
});

test('a warm sandbox reaches nothing; the sandbox taking it over has its namespace with its own policy', async () => {
  const warm = await until('a warm sandbox', async () => {
    if (runtime.warmPoolStatus().ready < 1) return undefined;
    const leases = fs.readdirSync(path.join(dataDir, 'network', 'leases'));
    const found = leases.map((address) => ({ address, lease: JSON.parse(fs.readFileSync(path.join(dataDir, 'network', 'leases', address), 'utf8')) }));
    return found.find(({ lease }) => String(lease.sandboxId).startsWith('warm_'));
  });
  expect(warm.lease.network).toEqual({ internet: false });
  const box = await start({ allowedDomains: ['www.allowed.test'] });
  expect(recordOf(box.id).network?.address).toBe(warm.address);
  expect((await curl(box, 'http://www.allowed.test/')).answer).toMatchObject({ local: allowed });
  expect((await curl(box, 'http://allowed.test/')).stdout).toMatch(/not in spec\.network\.allowedDomains/);
});

test('deleting a sandbox leaves no namespace, interface or lease; the node tears down to nothing', async () => {
  const box = await start({});
  const attachment: SandboxAttachment = recordOf(box.id).network!;
  const netns = path.basename(attachment.netnsPath);
  expect(execFileSync('ip', ['netns', 'list']).toString()).toContain(netns);
  await runtime.remove(box.id);
  expect(execFileSync('ip', ['netns', 'list']).toString()).not.toContain(netns);
  expect(execFileSync('ip', ['-o', 'link']).toString()).not.toContain(`${network.plan.interfacePrefix}${netns.slice('hangar-'.length)}`);
  expect(fs.existsSync(path.join(dataDir, 'network', 'leases', attachment.address))).toBe(false);

  for (const sandbox of await runtime.list()) await runtime.remove(sandbox.id);
  await runtime.close();
  await network.tearDown();
  const links = execFileSync('ip', ['-o', 'link']).toString();
  expect(links).not.toMatch(new RegExp(`${network.plan.interfacePrefix}[0-9a-f]{8}`));
  expect(links).not.toContain(network.plan.bridge);
  expect(execFileSync('nft', ['list', 'tables']).toString()).not.toContain(network.plan.table);
  expect(fs.readdirSync(path.join(dataDir, 'network', 'leases'))).toEqual([]);
  // afterAll tears down again: harmless.
});
