import { ApiError } from '../../domain/errors';
import type { ProxyOptions } from '../../runtime/http-proxy';
import type { PortTarget } from '../../domain/sandbox/port-path';
import type { RemoteRequest } from './remote-nodes';

/**
 * Where the gateway sends a request for a sandbox: a socket of this host, or the listener of the
 * sandbox's node (remote-nodes.ts); the path there, and what to say when it does not answer.
 */
export interface SandboxUpstream {
  via: { socketPath: string } | { remote: RemoteRequest };
  /** The sandbox's own path (with query); a remote request carries it inside its listener path. */
  path: string;
  /** Keep-alive pool: the sandbox's id for its API, `<id>:<port>` for a port (reset with the sandbox). */
  poolKey: string;
  /** Headers the upstream gets besides the caller's forwardable ones. */
  headers?: Record<string, string>;
  /** Which headers cross each way, where not the gateway's default (a preview's rules). */
  requestHeaders?: ProxyOptions['requestHeaders'];
  responseHeaders?: ProxyOptions['responseHeaders'];
  /** Its traffic passes the sandbox's API by, which therefore cannot count it as use. */
  bypassesApi?: boolean;
  /** The 502 body for an upstream that did not answer, after forgetting what may be stale. */
  unreachable(err: NodeJS.ErrnoException): { error: string; message: string };
}

/**
 * The sockets that reach ports of sandboxes, one per sandbox and port: the sandbox's own byte
 * forwarder for that port, opened and pinned on the host by the node on first use and remembered,
 * since a forwarder lives as long as the sandbox's API. Byte forwarding rather than a route of the
 * API: the API would parse every request and answer once more (bench/sandbox/port.ts measured it at
 * about 0.25 ms more per request). Concurrent first requests share one opening.
 */
export class SandboxPortSockets {
  private readonly sockets = new Map<string, Promise<string>>();
  private static readonly MAX = 10_000;

  constructor(private readonly open: (sandboxId: string, port: number) => Promise<string>) {}

  /** The upstream for `{sandbox_url}/port/{port}/...`: 502 when the sandbox cannot open a forwarder. */
  async upstream(sandboxId: string, { port, path }: PortTarget): Promise<SandboxUpstream> {
    const socketPath = await this.socket(sandboxId, port).catch((err: Error) => {
      throw new ApiError(502, 'sandbox_unreachable', `the sandbox could not forward port ${port}: ${err.message}`);
    });
    return {
      via: { socketPath },
      path,
      poolKey: `${sandboxId}:${port}`,
      // A local request to the program there, which development servers accept by default.
      headers: { host: `localhost:${port}` },
      bypassesApi: true,
      unreachable: (err) => {
        // The forwarder itself is gone (its sandbox's API restarted): open it again next time.
        if (err.code === 'ECONNREFUSED' || err.code === 'ENOENT') this.sockets.delete(`${sandboxId}:${port}`);
        return { error: 'port_unreachable', message: `nothing answered on port ${port} in the sandbox; is a server listening on 127.0.0.1:${port} there? (${err.message})` };
      },
    };
  }

  private socket(sandboxId: string, port: number): Promise<string> {
    const key = `${sandboxId}:${port}`;
    const known = this.sockets.get(key);
    if (known) return known;
    if (this.sockets.size >= SandboxPortSockets.MAX) this.sockets.delete(this.sockets.keys().next().value as string);
    const opening = this.open(sandboxId, port);
    this.sockets.set(key, opening);
    opening.catch(() => {
      if (this.sockets.get(key) === opening) this.sockets.delete(key);
    });
    return opening;
  }
}
