import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { cidrContains, parseCidr, type CidrBlock } from '../../domain/sandbox/ip-address';
import { SandboxNetwork, type SandboxNetworkOptions } from '../../runtime/network/sandbox-network';
import { until } from './sandbox-runtime';

/**
 * A stand-in for the internet, on this machine only: a network namespace reached from the host
 * through a veth pair, holding a few "hosts" (addresses of a /28 of TEST-NET-2 or -3, which the
 * internet does not route) served by one web server that answers which address and Host it was asked for.
 * Nothing a test does through it leaves the machine.
 */
export interface TestInternet {
  netns: string;
  /** The host end's address (a node address, so never a sandbox's destination). */
  hostSide: string;
  /** The /28 the host side and the hosts are in. */
  block: string;
  /** Addresses of the web server inside. */
  hosts: string[];
  close(): Promise<void>;
}

const SERVER = `
const http = require('node:http');
const https = require('node:https');
const fs = require('node:fs');
// /bytes/<n>: n bytes (a download to measure), byte i being i % 251, so bytes a relay moved or
// mixed up show (a whole chunk is 4177 periods, about 1 MiB); anything else: which address and Host were asked for.
const chunk = Buffer.from(Array.from({ length: 251 * 4177 }, (_, i) => i % 251));
function sendBytes(res, n) {
  res.writeHead(200, { 'content-length': n });
  const more = () => {
    while (n > 0) {
      const piece = n >= chunk.length ? chunk : chunk.subarray(0, n);
      n -= piece.length;
      if (!res.write(piece)) return res.once('drain', more);
    }
    res.end();
  };
  more();
}
const answer = (scheme) => (req, res) => {
  if (req.url.startsWith('/bytes/')) return sendBytes(res, Number(req.url.slice('/bytes/'.length)));
  res.end(JSON.stringify({ scheme, host: req.headers.host, local: req.socket.localAddress, path: req.url }));
};
http.createServer(answer('http')).listen(80, '0.0.0.0');
// Any other port of a host: only a connection routed past the node's rules would reach it.
http.createServer(answer('http-8080')).listen(8080, '0.0.0.0');
const tls = process.argv[1];
if (tls) https.createServer({ key: fs.readFileSync(tls + '/server.key'), cert: fs.readFileSync(tls + '/server.crt') }, answer('https')).listen(443, '0.0.0.0');
setInterval(() => {}, 1 << 30);
`;

const ipCommand = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();

/** The IPv4 addresses the machine's resolver gives the package registries it installs from (they may sit in a TEST-NET). */
function registryAddresses(): string[] {
  try {
    const answer = execFileSync('getent', ['ahostsv4', 'deb.debian.org', 'registry.npmjs.org', 'pypi.org'], { stdio: ['ignore', 'pipe', 'ignore'] });
    return answer.toString().split('\n').map((line) => line.split(/\s+/)[0]).filter(Boolean);
  } catch {
    return [];
  }
}

/** Where a test internet's /28 is taken from: the documentation ranges, or a private range (172.24.0.0/13, refused to sandboxes unless opened). */
export type TestInternetRange = 'test-net' | 'private';

function candidatePrefixes(range: TestInternetRange): string[] {
  if (range === 'test-net') return ['198.51.100.', '203.0.113.'];
  return Array.from({ length: 8 }, () => `172.${24 + Math.floor(Math.random() * 8)}.${Math.floor(Math.random() * 256)}.`);
}

/**
 * A /28 of the documentation ranges (TEST-NET-2 and -3, public-looking to the egress proxy), or
 * of a private range, that nothing of this machine uses: no route to any part of it (two test
 * runs at once must not route the same hosts, or one's proxy reaches the other's), and none of
 * the package registries' addresses (some environments serve their mirror from such a range;
 * shadowing it would cut off installs while the test runs). Answers its first address's prefix
 * (`a.b.c.`) and offset.
 */
function freeTestNetBlock(range: TestInternetRange): { prefix: string; base: number } {
  const routes = JSON.parse(ipCommand('-j', '-4', 'route', 'show')) as { dst: string }[];
  const taken = [...routes.map((route) => route.dst).filter((dst) => dst !== 'default'), ...registryAddresses()]
    .map((entry) => parseCidr(entry.includes('/') ? entry : `${entry}/32`))
    .filter((block): block is CidrBlock => block !== undefined && !('problem' in block));
  const overlaps = (block: CidrBlock) => taken.some((other) => cidrContains(block, { family: 4, value: other.base }) || cidrContains(other, { family: 4, value: block.base }));
  const candidates = candidatePrefixes(range).flatMap((prefix) => Array.from({ length: 16 }, (_, i) => ({ prefix, base: i * 16 })));
  const free = candidates.sort(() => Math.random() - 0.5).find(({ prefix, base }) => !overlaps(parseCidr(`${prefix}${base}/28`) as CidrBlock));
  if (!free) throw new Error(`every /28 of ${candidatePrefixes(range).join(', ')} is in use: test internets left behind?`);
  return free;
}

/**
 * Starts the test internet: `hostCount` (at most 13) addresses of a free /28 of TEST-NET-2 or -3
 * (or of a private range) behind its first; TLS too when `tlsDir` holds server.key and server.crt.
 */
export async function startTestInternet(hostCount: number, tlsDir?: string, range: TestInternetRange = 'test-net'): Promise<TestInternet> {
  if (hostCount > 13) throw new Error('a test internet has at most 13 hosts');
  const tag = randomBytes(3).toString('hex');
  const netns = `hgi-${tag}`;
  const hostInterface = `hgi${tag}`;
  const { prefix, base } = freeTestNetBlock(range);
  const hostSide = `${prefix}${base + 1}`;
  const hosts = Array.from({ length: hostCount }, (_, i) => `${prefix}${base + i + 2}`);
  ipCommand('netns', 'add', netns);
  ipCommand('link', 'add', hostInterface, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns);
  ipCommand('addr', 'add', `${hostSide}/28`, 'dev', hostInterface);
  ipCommand('link', 'set', hostInterface, 'up');
  for (const host of hosts) ipCommand('-n', netns, 'addr', 'add', `${host}/28`, 'dev', 'eth0');
  ipCommand('-n', netns, 'link', 'set', 'lo', 'up');
  ipCommand('-n', netns, 'link', 'set', 'eth0', 'up');
  const server: ChildProcess = spawn('ip', ['netns', 'exec', netns, process.execPath, '-e', SERVER, ...(tlsDir ? [tlsDir] : [])], { stdio: 'ignore' });
  const internet: TestInternet = {
    netns,
    hostSide,
    block: `${prefix}${base}/28`,
    hosts,
    async close() {
      server.kill('SIGKILL');
      await new Promise((resolve) => (server.exitCode === null && server.signalCode === null ? server.once('exit', resolve) : resolve(undefined)));
      try {
        ipCommand('link', 'del', hostInterface);
      } catch {
        // gone with the namespace
      }
      ipCommand('netns', 'del', netns);
    },
  };
  try {
    await until('the test internet server', () => {
      const listening = execFileSync('ip', ['netns', 'exec', netns, 'ss', '-Hltn'], { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
      return listening.includes(':80 ') && listening.includes(':8080 ') && (!tlsDir || listening.includes(':443 '));
    });
  } catch (err) {
    // A server that did not come up leaves no namespace or link behind.
    await internet.close();
    throw err;
  }
  return internet;
}

/** A test CA and a server certificate for `names`, made with openssl in `dir`; answers the CA's file. */
export function makeTestCertificates(dir: string, names: string[]): string {
  fs.mkdirSync(dir, { recursive: true });
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=hangar test CA');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', `/CN=${names[0]}`);
  fs.writeFileSync(path.join(dir, 'ext.cnf'), `subjectAltName=${names.map((name) => `DNS:${name}`).join(',')}\n`);
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'ext.cnf');
  for (const file of fs.readdirSync(dir)) fs.chmodSync(path.join(dir, file), 0o644);
  return path.join(dir, 'ca.crt');
}

/**
 * A node's sandbox network of its own for one test file (its bridge, subnet, nftables table and
 * interface names chosen not to meet another file's), resolving only the names `names` gives: a
 * name's addresses, or (a string) the name it is an alias of.
 */
export function testSandboxNetwork(dataDir: string, names: () => Record<string, string[] | string>, options: Partial<SandboxNetworkOptions> = {}): SandboxNetwork {
  const tag = randomBytes(2).toString('hex');
  return new SandboxNetwork({
    dataDir,
    subnet: `10.${201 + (parseInt(tag, 16) % 48)}.${parseInt(tag.slice(0, 2), 16)}.0/24`,
    bridge: `hgb${tag}`,
    table: `hangar_test_${tag}`,
    interfacePrefix: `hgt${tag}`.slice(0, 7),
    resolve: async (name) => {
      const aliases: string[] = [];
      let entry = names()[name];
      while (typeof entry === 'string' && aliases.length < 8) {
        aliases.push(entry);
        entry = names()[entry];
      }
      if (!Array.isArray(entry)) throw new Error(`${name}: no such test host`);
      return { addresses: entry, aliases };
    },
    ...options,
  });
}
