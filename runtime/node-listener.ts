import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { checkNodeRequest, NODE_CREDENTIAL_HEADER } from '../domain/nodes/node-credential';
import { NODE_THAWED_HEADER, parseListenerPath, type ListenerTarget } from '../domain/nodes/listener-paths';
import type { NodeListenAddress } from '../domain/nodes/listener-address';
import { forwardableHeaders, HOP_BY_HOP_HEADERS, proxyRequest } from './http-proxy';
import { sandboxLayout, workloadSocketsDir } from './layout';
import type { FreezeState } from './sandbox-runtime';
import { refuseUpgrade, relayUpgrade, UpgradedConnections } from './upgrade-relay';

/** What the listener needs of the node's runtime: the sandboxes' sockets and their freezing. */
export interface ListenedSandboxes {
  socketPath(sandboxId: string): string;
  portSocket(sandboxId: string, port: number): Promise<string>;
  isFrozen(sandboxId: string): Promise<boolean>;
  thaw(sandboxId: string): Promise<FreezeState>;
}

export interface NodeListenerOptions {
  nodeId: string;
  /** nodeCredentialKey(master key): what the gateways sign each request with. */
  key: Buffer;
  dataDir: string;
  sandboxes: ListenedSandboxes;
  listen: NodeListenAddress;
}

/** The gateway's credential never goes further than the listener, nor does one hop's headers. */
const DROPPED_HEADERS: ReadonlySet<string> = new Set([...HOP_BY_HOP_HEADERS, NODE_CREDENTIAL_HEADER]);
const MAX_PORT_SOCKETS = 10_000;

type SocketTarget = Exclude<ListenerTarget, { kind: 'sandbox-frozen' | 'sandbox-thaw' }>;
type Refusal = { status: number; error: string; message: string };

function answer(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * A node's one TCP listener for the gateways of other hosts: each request names a sandbox's API,
 * a port inside a sandbox, its freeze state, or a workload instance's socket of this node
 * (domain/nodes/listener-paths.ts), and is streamed to that Unix socket (upgrades relayed), as a
 * gateway on this host does itself. A request passes only with a credential the platform signed
 * for this node, this method and this path a moment ago (domain/nodes/node-credential.ts): a
 * sandbox user's credentials mean nothing here, and the credential itself is not forwarded.
 */
export class NodeListener {
  private readonly server: http.Server;
  private readonly agents = new Map<string, http.Agent>();
  private readonly portSockets = new Map<string, Promise<string>>();
  /** WebSockets relayed to this node's sandboxes and workloads, cut when the listener closes. */
  private readonly upgraded = new UpgradedConnections();

  constructor(private readonly options: NodeListenerOptions) {
    this.server = http.createServer((req, res) => void this.serve(req, res));
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.upgraded.add(socket);
      void this.upgrade(req, socket, head);
    });
    // Longer than the gateways' idle keep-alive, so they never reuse a connection closed here.
    this.server.keepAliveTimeout = 65_000;
  }

  async start(): Promise<void> {
    const { host, port } = this.options.listen;
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => resolve());
    });
  }

  /** The port it listens on (the configured one, or the one chosen for port 0). */
  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    this.upgraded.destroyAll();
    for (const agent of this.agents.values()) agent.destroy();
    await closed;
  }

  /** The request's target if its credential holds; otherwise what to answer. */
  private admit(req: IncomingMessage): ListenerTarget | Refusal {
    const credential = req.headers[NODE_CREDENTIAL_HEADER];
    const url = req.url ?? '/';
    const refused = checkNodeRequest(this.options.key, this.options.nodeId, req.method ?? 'GET', url, typeof credential === 'string' ? credential : undefined);
    if (refused) return { status: refused.status, error: 'node_credential_refused', message: refused.reason };
    const target = parseListenerPath(url);
    return target ?? { status: 404, error: 'not_found', message: `node '${this.options.nodeId}' serves no ${url}` };
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = this.admit(req);
    if ('status' in target) return answer(res, target.status, { error: target.error, message: target.message });
    try {
      if (target.kind === 'sandbox-frozen' || target.kind === 'sandbox-thaw') return await this.freezing(req, res, target);
      const thawed = target.kind === 'workload' ? undefined : await this.thawIfFrozen(target.sandboxId);
      const socketPath = await this.socketOf(target);
      proxyRequest(req, res, {
        upstream: { socketPath },
        path: target.rest,
        requestHeaders: (headers) => forwardableHeaders(headers, undefined, DROPPED_HEADERS),
        responseHeaders: (headers) => forwardableHeaders(headers, thawed && { [NODE_THAWED_HEADER]: `${thawed.generation},${thawed.thawedAt ?? Date.now()}` }, HOP_BY_HOP_HEADERS),
        headers: target.kind === 'sandbox-port' ? { host: `localhost:${target.port}` } : undefined,
        agent: this.agentFor(socketPath),
        onUnreachable: (err) => {
          this.unreachable(target, socketPath, err);
          answer(res, 502, { error: 'upstream_unreachable', message: `node '${this.options.nodeId}': nothing answered for ${req.url}: ${err.message}` });
        },
      });
    } catch (err) {
      if (!res.headersSent) answer(res, 502, { error: 'upstream_unreachable', message: `node '${this.options.nodeId}': ${(err as Error).message}` });
    }
  }

  private async freezing(req: IncomingMessage, res: ServerResponse, target: Extract<ListenerTarget, { kind: 'sandbox-frozen' | 'sandbox-thaw' }>): Promise<void> {
    const { sandboxes } = this.options;
    const method = target.kind === 'sandbox-frozen' ? 'GET' : 'POST';
    if (req.method !== method) return answer(res, 405, { error: 'method_not_allowed', message: `${req.url} takes ${method}` });
    req.resume();
    if (target.kind === 'sandbox-frozen') return answer(res, 200, { frozen: await sandboxes.isFrozen(target.sandboxId) });
    answer(res, 200, await this.thaw(target.sandboxId));
  }

  /** Thaws a sandbox in standby (its state, as after the thaw), or undefined when it runs. */
  private async thawIfFrozen(sandboxId: string): Promise<FreezeState | undefined> {
    return (await this.options.sandboxes.isFrozen(sandboxId)) ? this.thaw(sandboxId) : undefined;
  }

  private async thaw(sandboxId: string): Promise<FreezeState> {
    const thawed = await this.options.sandboxes.thaw(sandboxId);
    // The sandbox closes the idle connections it held across the freeze: its pools (API, ports) go with them.
    const root = `${sandboxLayout(this.options.dataDir, sandboxId).root}/`;
    for (const [socketPath, agent] of this.agents) {
      if (!socketPath.startsWith(root)) continue;
      agent.destroy();
      this.agents.delete(socketPath);
    }
    return thawed;
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    const target = this.admit(req);
    if ('status' in target) return refuseUpgrade(socket, target.status, { error: target.error, message: target.message });
    if (target.kind === 'sandbox-frozen' || target.kind === 'sandbox-thaw') return refuseUpgrade(socket, 400, { error: 'bad_request', message: `${req.url} takes no upgrade` });
    let socketPath: string;
    try {
      socketPath = await this.socketOf(target);
    } catch (err) {
      return refuseUpgrade(socket, 502, { error: 'upstream_unreachable', message: (err as Error).message });
    }
    const headers = {
      ...forwardableHeaders(req.headers, undefined, DROPPED_HEADERS),
      host: target.kind === 'sandbox-port' ? `localhost:${target.port}` : 'localhost',
      connection: 'Upgrade',
      upgrade: req.headers.upgrade,
    };
    relayUpgrade(socket, { path: socketPath }, { method: req.method ?? 'GET', path: target.rest, headers }, head, (err) => {
      this.unreachable(target, socketPath, err);
      refuseUpgrade(socket, 502, { error: 'upstream_unreachable', message: `node '${this.options.nodeId}': nothing answered for ${req.url}: ${err.message}` });
    });
  }

  /** The Unix socket a target reaches on this node: a port's forwarder is opened once and remembered. */
  private socketOf(target: SocketTarget): Promise<string> {
    if (target.kind === 'sandbox-api') return Promise.resolve(this.options.sandboxes.socketPath(target.sandboxId));
    if (target.kind === 'workload') return Promise.resolve(path.join(workloadSocketsDir(this.options.dataDir), target.socketName));
    const key = `${target.sandboxId}:${target.port}`;
    const known = this.portSockets.get(key);
    if (known) return known;
    if (this.portSockets.size >= MAX_PORT_SOCKETS) this.portSockets.clear();
    const opening = this.options.sandboxes.portSocket(target.sandboxId, target.port);
    this.portSockets.set(key, opening);
    opening.catch(() => this.portSockets.delete(key));
    return opening;
  }

  /** A socket that did not answer: its pool is dropped, and a port's forwarder opened again next time. */
  private unreachable(target: SocketTarget, socketPath: string, err: NodeJS.ErrnoException): void {
    this.agents.get(socketPath)?.destroy();
    this.agents.delete(socketPath);
    if (target.kind === 'sandbox-port' && (err.code === 'ECONNREFUSED' || err.code === 'ENOENT')) this.portSockets.delete(`${target.sandboxId}:${target.port}`);
  }

  private agentFor(socketPath: string): http.Agent {
    let agent = this.agents.get(socketPath);
    if (!agent) {
      if (this.agents.size >= MAX_PORT_SOCKETS) this.agents.clear();
      agent = new http.Agent({ keepAlive: true, maxSockets: 256, timeout: 30_000 });
      this.agents.set(socketPath, agent);
    }
    return agent;
  }
}
