import net from 'node:net';
import { addressVerdict, aliasVerdict, hostVerdict, type EgressPolicy } from '../../domain/sandbox/network-policy';
import type { CidrBlock } from '../../domain/sandbox/ip-address';
import { MAX_FIRST_BYTES, httpHost, requestHead, splitHostPort, tlsServerName, type FirstBytes } from './client-hello';

/** A name's addresses, and the names (CNAME targets) it went through to them. */
export interface NameResolution {
  addresses: string[];
  aliases: string[];
}

/** How the node resolves a host name (tests give a map of their own hosts). */
export type NameResolver = (name: string) => Promise<NameResolution>;

/** Who a source address is, and the policy it has right now. */
export type PolicyLookup = (sourceAddress: string) => { sandboxId: string; policy: EgressPolicy } | undefined;

export interface EgressRefusal {
  sandboxId?: string;
  source: string;
  host: string;
  rule: string;
}

export interface EgressContext {
  lookup: PolicyLookup;
  resolve: NameResolver;
  /** The node's own addresses and the sandbox subnet, refused whatever the policy. */
  nodeBlocked: () => readonly CidrBlock[];
  /** Blocks of private ranges the operator opened to sandboxes (the rest of them stay refused). */
  allowedPrivate?: readonly CidrBlock[];
  onRefused?: (refusal: EgressRefusal) => void;
  /** Bytes a sandbox's connection carried, out (from the sandbox) and in, as they pass. */
  onTraffic?: (sandboxId: string, bytesOut: number, bytesIn: number) => void;
}

type Decision = { address: string; sandboxId: string } | { refused: string };

/**
 * The addresses a sandbox with `policy` may reach `host` at: its policy asked about the name (or
 * literal address) as the client sent it, then the name resolved here, the aliases it went
 * through and each address checked, so a literal address, an alias or a name resolving into a
 * blocked range gets nowhere. Refused: the rule that refused it.
 */
export async function permittedAddresses(context: EgressContext, policy: EgressPolicy, host: string): Promise<{ addresses: string[] } | { refused: string }> {
  const verdict = hostVerdict(policy, host);
  if (!verdict.allowed) return { refused: verdict.rule };
  let resolution: NameResolution;
  try {
    resolution = net.isIP(host) ? { addresses: [host], aliases: [] } : await context.resolve(host);
  } catch (err) {
    return { refused: `${host} does not resolve: ${(err as Error).message}` };
  }
  for (const alias of resolution.aliases) {
    const check = aliasVerdict(policy, host, alias);
    if (!check.allowed) return { refused: check.rule };
  }
  const reach = { nodeBlocked: context.nodeBlocked(), allowedPrivate: context.allowedPrivate };
  const checks = resolution.addresses.map((address) => ({ address, check: addressVerdict(policy, host, address, reach) }));
  const addresses = checks.filter(({ check }) => check.allowed).map(({ address }) => address);
  if (addresses.length > 0) return { addresses };
  const refusal = checks.map(({ check }) => check).find((check) => !check.allowed);
  return { refused: refusal && !refusal.allowed ? refusal.rule : `${host} has no address` };
}

/** Where a sandbox's connection to `host` goes, by permittedAddresses; refusals are reported. */
export async function egressDestination(context: EgressContext, source: string, host: string): Promise<Decision> {
  const owner = context.lookup(source);
  const permitted = owner ? await permittedAddresses(context, owner.policy, host) : { refused: `${source} is not a sandbox of this node` };
  if ('addresses' in permitted) return { address: permitted.addresses[0], sandboxId: owner!.sandboxId };
  context.onRefused?.({ sandboxId: owner?.sandboxId, source, host, rule: permitted.refused });
  return permitted;
}

/**
 * How long a connection may take to name its destination: a sandbox holding connections open
 * without a word would otherwise hold the node's sockets for as long as it likes.
 */
const FIRST_BYTES_TIMEOUT_MS = 30_000;

/** Reads the first bytes until `parse` names a destination (or cannot). */
function readFirstBytes(socket: net.Socket, parse: (data: Buffer) => FirstBytes): Promise<{ data: Buffer; first: FirstBytes }> {
  return new Promise((resolve) => {
    let data = Buffer.alloc(0);
    const done = (first: FirstBytes) => {
      socket.off('data', onData);
      socket.off('end', onEnd);
      socket.off('close', onEnd);
      socket.off('timeout', onTimeout);
      socket.setTimeout(0);
      socket.pause();
      resolve({ data, first });
    };
    const onTimeout = () => {
      done({ problem: 'no destination named in time' });
      socket.destroy();
    };
    const onData = (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const first = parse(data);
      if (!('need' in first)) done(first);
      else if (data.length > MAX_FIRST_BYTES) done({ problem: 'no destination in the first bytes' });
    };
    const onEnd = () => done({ problem: 'the connection ended first' });
    socket.on('data', onData);
    socket.on('end', onEnd);
    socket.on('close', onEnd);
    socket.setTimeout(FIRST_BYTES_TIMEOUT_MS, onTimeout);
  });
}

/** A relayed connection's first read buffer, and the largest it grows to while reads fill it. */
const READ_BUFFER_MIN = 16 * 1024;
const READ_BUFFER_MAX = 1024 * 1024;

/**
 * How the upstream socket's bytes reach the client: read into a buffer of the relay's own
 * (Node's default is a new 64 KiB buffer per read, then garbage) that grows while reads fill it,
 * so a download takes up to 1 MiB per read while an idle or chatty connection keeps 16 KiB. The
 * same buffer is read into again once the client took the last chunk whole; a new one when the
 * client still holds part of it. Reading stops while the client is full, until it drains.
 * Measured (bench/sandbox/network.ts, relay CPU per GB moved): about half of pipe()'s.
 */
function relayReads(client: net.Socket, upstream: () => net.Socket, onBytes: (bytes: number) => void): net.OnReadOpts {
  let buffer = Buffer.allocUnsafe(READ_BUFFER_MIN);
  return {
    buffer: () => buffer,
    callback: (bytes, into) => {
      onBytes(bytes);
      const flowing = client.write(into.subarray(0, bytes));
      const grow = bytes === into.length && into.length < READ_BUFFER_MAX;
      if (grow || client.writableLength > 0) buffer = Buffer.allocUnsafe(grow ? into.length * 4 : into.length);
      if (flowing) return true;
      client.once('drain', () => upstream().resume());
      return false;
    },
  };
}

/**
 * Joins the client to `address:port`, sending `head` first. Bytes are counted as they pass. Either
 * side failing or the client closing ends both at once; the upstream closing cleanly ends the
 * client after what it still holds for it (a download must not lose its last bytes).
 */
function splice(context: EgressContext, sandboxId: string, client: net.Socket, to: { address: string; port: number; head: Buffer }, onConnected?: () => void): void {
  const { address, port, head } = to;
  const count = context.onTraffic;
  const upstream: net.Socket = net.connect({ host: address, port, onread: relayReads(client, () => upstream, (bytes) => count?.(sandboxId, 0, bytes)) });
  if (count) {
    count(sandboxId, head.length, 0);
    client.on('data', (chunk: Buffer) => count(sandboxId, chunk.length, 0));
  }
  upstream.on('connect', () => {
    onConnected?.();
    if (head.length > 0) upstream.write(head);
    client.pipe(upstream);
    client.resume();
  });
  upstream.on('end', () => client.end());
  upstream.on('error', () => client.destroy());
  client.on('error', () => upstream.destroy());
  client.on('close', () => upstream.destroy());
  upstream.on('close', (hadError) => (hadError ? client.destroy() : client.end()));
}

const refusalText = (host: string, rule: string) => `hangar egress refused ${host}: ${rule}\n`;

function answerRefused(socket: net.Socket, host: string, rule: string): void {
  const body = refusalText(host, rule);
  socket.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

/** A connection redirected from port 80 (`kind: 'http'`, by its Host) or 443 (`'tls'`, by its SNI). */
export async function handleTransparent(context: EgressContext, socket: net.Socket, kind: 'http' | 'tls'): Promise<void> {
  socket.on('error', () => socket.destroy());
  const { data, first } = await readFirstBytes(socket, kind === 'tls' ? tlsServerName : httpHost);
  if ('problem' in first || 'need' in first) {
    context.onRefused?.({ source: socket.remoteAddress ?? '', host: '', rule: 'problem' in first ? first.problem : 'incomplete' });
    if (kind === 'http') answerRefused(socket, '(unknown)', 'problem' in first ? first.problem : 'incomplete request');
    else socket.destroy();
    return;
  }
  const decision = await egressDestination(context, socket.remoteAddress ?? '', first.host);
  if ('refused' in decision) {
    if (kind === 'http') answerRefused(socket, first.host, decision.refused);
    else socket.destroy();
    return;
  }
  splice(context, decision.sandboxId, socket, { address: decision.address, port: kind === 'tls' ? 443 : 80, head: data });
}

/**
 * The explicit proxy (HTTP_PROXY / HTTPS_PROXY inside): `CONNECT host:port` tunnels, and
 * absolute-form requests (`GET http://host/path`) go on in origin form.
 */
export async function handleExplicit(context: EgressContext, socket: net.Socket): Promise<void> {
  socket.on('error', () => socket.destroy());
  const { data } = await readFirstBytes(socket, (bytes) => (requestHead(bytes) === undefined ? { need: 'more' } : { host: '' }));
  const head = requestHead(data);
  const [method, target, version] = (head?.split('\r\n')[0] ?? '').split(' ');
  const connect = method === 'CONNECT';
  const destination = connect ? splitHostPort(target ?? '') : absoluteTarget(target ?? '');
  if (!head || !destination || !version) return answerRefused(socket, '(unknown)', 'not a CONNECT or absolute-form proxy request');
  const port = destination.port ?? 80;
  const decision = await egressDestination(context, socket.remoteAddress ?? '', destination.host);
  if ('refused' in decision) return answerRefused(socket, destination.host, decision.refused);
  if (connect) {
    const rest = data.subarray(head.length + 4);
    splice(context, decision.sandboxId, socket, { address: decision.address, port, head: rest }, () => socket.write(`${version} 200 Connection Established\r\n\r\n`));
    return;
  }
  const originLine = `${method} ${'path' in destination ? destination.path : '/'} ${version}`;
  const rewritten = Buffer.concat([Buffer.from(originLine, 'latin1'), data.subarray(head.indexOf('\r\n'))]);
  splice(context, decision.sandboxId, socket, { address: decision.address, port, head: rewritten });
}

function absoluteTarget(target: string): { host: string; port?: number; path: string } | undefined {
  try {
    const url = new URL(target);
    if (url.protocol !== 'http:') return undefined;
    return { host: url.hostname.replace(/^\[|\]$/g, ''), port: url.port ? Number(url.port) : undefined, path: `${url.pathname}${url.search}` };
  } catch {
    return undefined;
  }
}
