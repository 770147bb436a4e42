import http from 'node:http';
import { ApiError } from '../../domain/errors';
import { listenerEndpoint, type NodeListenAddress } from '../../domain/nodes/listener-address';
import { listenerPath, type ListenerTarget } from '../../domain/nodes/listener-paths';
import { NODE_CREDENTIAL_HEADER, signNodeRequest } from '../../domain/nodes/node-credential';
import type { FreezeState } from '../../runtime/sandbox-runtime';

/** Where a route's sandbox or workload instance runs, as the route cache read it (migration 023). */
export interface RouteNode {
  /** Undefined for rows from before placement: they run on the node of the gateway's own host. */
  nodeId?: string;
  /** The node's listener, from its heartbeat; undefined for a node that has none. */
  listenerUrl?: string;
}

/** A request to send to another node's listener: where, on which connections, and its credential. */
export interface RemoteRequest {
  endpoint: NodeListenAddress;
  /** The listener path, with the sandbox's or instance's own path and query inside. */
  path: string;
  agent: http.Agent;
  nodeId: string;
  /** The credential header for this request, signed for its method (each request its own). */
  credential(method: string): Record<string, string>;
}

const REMOTE_CALL_TIMEOUT_MS = 10_000;

/**
 * How the gateways of this host reach sandboxes and workload instances on other nodes: over TCP
 * to the node's listener (runtime/node-listener.ts), on keep-alive connections kept per node (a
 * request costs no new connection in the steady state), each request with a credential signed
 * for that node, method and path with the key derived from the master key. Routes whose node is
 * this host's own (or none) keep the direct Unix sockets.
 */
export class RemoteNodes {
  private readonly agents = new Map<string, { url: string; agent: http.Agent }>();

  constructor(
    private readonly localNodeId: string,
    private readonly key: Buffer,
  ) {}

  isLocal(node: RouteNode): boolean {
    return node.nodeId === undefined || node.nodeId === this.localNodeId;
  }

  /** A request for `target` on the route's node (a remote one): 502 when that node has no listener. */
  request(node: RouteNode, target: ListenerTarget): RemoteRequest {
    const nodeId = node.nodeId!;
    const endpoint = node.listenerUrl ? listenerEndpoint(node.listenerUrl) : undefined;
    if (!endpoint) throw new ApiError(502, 'node_unreachable', `node '${nodeId}' has no listener this gateway can reach (HANGAR_NODE_LISTEN on that node)`);
    const path = listenerPath(target);
    return {
      endpoint,
      path,
      nodeId,
      agent: this.agentFor(nodeId, node.listenerUrl!),
      credential: (method) => ({ [NODE_CREDENTIAL_HEADER]: signNodeRequest(this.key, nodeId, method, path) }),
    };
  }

  async isFrozen(node: RouteNode, sandboxId: string): Promise<boolean> {
    return ((await this.call(node, 'GET', { kind: 'sandbox-frozen', sandboxId })) as { frozen: boolean }).frozen;
  }

  async thaw(node: RouteNode, sandboxId: string): Promise<FreezeState> {
    return (await this.call(node, 'POST', { kind: 'sandbox-thaw', sandboxId })) as FreezeState;
  }

  /** Drops a node's connections (it did not answer: its address may have changed). */
  reset(nodeId: string): void {
    this.agents.get(nodeId)?.agent.destroy();
    this.agents.delete(nodeId);
  }

  close(): void {
    for (const { agent } of this.agents.values()) agent.destroy();
    this.agents.clear();
  }

  private agentFor(nodeId: string, url: string): http.Agent {
    const known = this.agents.get(nodeId);
    if (known?.url === url) return known.agent;
    known?.agent.destroy();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 256, timeout: 30_000 });
    this.agents.set(nodeId, { url, agent });
    return agent;
  }

  /** A small JSON call of the listener's own (freeze state, thaw). */
  private call(node: RouteNode, method: string, target: ListenerTarget): Promise<unknown> {
    const remote = this.request(node, target);
    return new Promise((resolve, reject) => {
      const req = http.request({ ...remote.endpoint, agent: remote.agent, method, path: remote.path, headers: remote.credential(method), timeout: REMOTE_CALL_TIMEOUT_MS }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode === 200) return resolve(JSON.parse(text));
          reject(new ApiError(502, 'node_unreachable', `node '${remote.nodeId}' answered ${res.statusCode}: ${text.slice(0, 300)}`));
        });
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${REMOTE_CALL_TIMEOUT_MS} ms`)));
      req.on('error', (err) => {
        this.reset(remote.nodeId);
        reject(new ApiError(502, 'node_unreachable', `node '${remote.nodeId}' did not answer: ${err.message}`));
      });
      req.end();
    });
  }
}
