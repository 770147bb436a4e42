import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { proxyRequest } from '../../runtime/http-proxy';

/**
 * The gateway benchmark's floor for one HTTP hop in Node: a bare `node:http` server streaming
 * every request to one Unix socket with the gateway's own proxy code, with no framework, no
 * credential check and no routing. In a process of its own, like the API process; started by
 * gateway.ts with `fork` (argv: the socket), it reports its port over IPC and ends with its parent.
 */
function main(socketPath: string): void {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const server = http.createServer((req, res) =>
    proxyRequest(req, res, {
      upstream: { socketPath },
      path: req.url ?? '/',
      agent,
      onUnreachable: (err) => {
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'unreachable', message: err.message }));
      },
    }),
  );
  server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
}

if (require.main === module) {
  process.on('disconnect', () => process.exit(0));
  main(process.argv[2]);
}
