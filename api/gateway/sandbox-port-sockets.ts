import http from 'node:http';
import path from 'node:path';
import { SandboxAgentClient } from '../../runtime/agent-client';
import { sandboxLayout } from '../../runtime/layout';

/** Keep-alive connections to one forwarded port at most; a port serves one app. */
const MAX_SOCKETS_PER_PORT = 64;
const MAX_ENTRIES = 2_000;

/**
 * The host-side sockets that reach ports inside sandboxes, through the agent's own forwarder (the
 * internal `/network/forward` route, as workload revisions use it): asked for once per sandbox
 * and port, then reused with a keep-alive pool each. A forwarder that stops answering (the
 * sandbox restarted) is forgotten and asked for again on the next request.
 */
export class SandboxPortSockets {
  private readonly sockets = new Map<string, Promise<{ socketPath: string; agent: http.Agent }>>();

  constructor(
    private readonly dataDir: string,
    private readonly node: { socketPath(sandboxId: string): string },
  ) {}

  /** The socket reaching `port` of the sandbox, opening its forwarder the first time. */
  socketFor(sandboxId: string, port: number): Promise<{ socketPath: string; agent: http.Agent }> {
    const key = `${sandboxId}:${port}`;
    let socket = this.sockets.get(key);
    if (!socket) {
      if (this.sockets.size >= MAX_ENTRIES) this.close();
      socket = this.open(sandboxId, port);
      socket.catch(() => this.sockets.delete(key));
      this.sockets.set(key, socket);
    }
    return socket;
  }

  private async open(sandboxId: string, port: number): Promise<{ socketPath: string; agent: http.Agent }> {
    const forward = await new SandboxAgentClient(this.node.socketPath(sandboxId)).forwardPort(port, { timeoutMs: 5_000 });
    // The agent names the socket as it sees it; the host finds it in the sandbox's run folder.
    const socketPath = path.join(sandboxLayout(this.dataDir, sandboxId).runDir, path.basename(forward.socketPath));
    return { socketPath, agent: new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS_PER_PORT, timeout: 4_000 }) };
  }

  /** Drops the forwarders of a sandbox (all its ports) or of one port. */
  forget(sandboxId: string, port?: number): void {
    for (const [key, socket] of this.sockets) {
      if (port === undefined ? key.startsWith(`${sandboxId}:`) : key === `${sandboxId}:${port}`) {
        this.sockets.delete(key);
        socket.then((s) => s.agent.destroy(), () => undefined);
      }
    }
  }

  close(): void {
    for (const socket of this.sockets.values()) socket.then((s) => s.agent.destroy(), () => undefined);
    this.sockets.clear();
  }
}
