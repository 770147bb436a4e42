import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/**
 * A plain L4 forwarder from a Unix socket in the run folder (seen by the host) to a port a
 * process of the sandbox listens on inside its own network namespace. Bytes are piped both ways
 * with no parsing, so HTTP keep-alive, streaming and anything else pass through unchanged.
 */
export class PortForwards {
  private readonly servers = new Map<number, net.Server>();

  constructor(private readonly runDir: string) {}

  socketPath(port: number): string {
    return path.join(this.runDir, `port-${port}.sock`);
  }

  /** Idempotent: a second call for the same port answers the same socket. */
  async open(port: number): Promise<string> {
    const socketPath = this.socketPath(port);
    if (this.servers.has(port)) return socketPath;
    fs.rmSync(socketPath, { force: true });
    const server = net.createServer((client) => {
      // No Nagle delay on the relayed bytes: a request written in two parts must not wait for
      // the first part's acknowledgement (the client side is a Unix socket, which has none).
      const target = net.connect({ host: '127.0.0.1', port, noDelay: true });
      client.pipe(target);
      target.pipe(client);
      const end = () => {
        client.destroy();
        target.destroy();
      };
      client.on('error', end);
      target.on('error', end);
      client.on('close', end);
      target.on('close', end);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => resolve());
    });
    this.servers.set(port, server);
    return socketPath;
  }
}
