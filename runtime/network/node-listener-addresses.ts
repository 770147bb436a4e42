import dns from 'node:dns/promises';
import net from 'node:net';
import type { Pool } from 'pg';
import { listenerEndpoint } from '../../domain/nodes/listener-address';
import { parseIp, type CidrBlock } from '../../domain/sandbox/ip-address';
import { listNodes } from '../../store/nodes';

const REFRESH_MS = 5_000;

/**
 * The addresses of every node's listener, as the nodes table advertises them, read again every
 * few seconds: a sandbox is refused them as it is refused its own node's addresses, so code in a
 * sandbox of one node never gets to knock on another node's listener (it would still need a
 * credential, but it gets no connection to try). A listener named by a host name is resolved here.
 */
export class NodeListenerAddresses {
  private current: CidrBlock[] = [];
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly pg: Pool,
    private readonly onError: (err: Error) => void = () => undefined,
  ) {}

  /** Reads them once (awaited, so the first sandbox is already refused them), then keeps them fresh. */
  async start(): Promise<void> {
    await this.refresh();
    this.schedule();
  }

  blocks(): readonly CidrBlock[] {
    return this.current;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.refresh()
        .catch((err: Error) => this.onError(err))
        .finally(() => this.schedule());
    }, REFRESH_MS);
    this.timer.unref();
  }

  async refresh(): Promise<void> {
    const hosts = (await listNodes(this.pg)).map((row) => row.listener_url && listenerEndpoint(row.listener_url)?.host).filter((host): host is string => !!host);
    const addresses = await Promise.all(hosts.map(async (host) => (net.isIP(host) ? [host] : (await dns.lookup(host, { all: true }).catch(() => [])).map((entry) => entry.address))));
    this.current = addresses
      .flat()
      .map((address) => parseIp(address))
      .filter((address) => !!address)
      .map((address) => ({ family: address.family, base: address.value, prefix: address.family === 4 ? 32 : 128 }));
  }
}
