import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

/**
 * The least any upload through a Node gateway to a Node sandbox API can cost on this machine: the
 * same processes and hops as the real path (the caller and a proxy in this process, a server in
 * another behind a Unix socket), doing nothing but moving bytes. The proxy pipes each request
 * through untouched; the server writes each body raw to a file (no multipart parsing, no etag, no
 * checks) and answers what the multipart routes answer. What the real upload costs beyond this is
 * the product's own work.
 */
const SINK = `
const http = require('node:http');
const fs = require('node:fs');
const [socketPath, dir] = process.argv.slice(1);
let n = 0;
http.createServer((req, res) => {
  const partNumber = Number(new URL(req.url, 'http://sink').searchParams.get('partNumber') || 0);
  const answer = () => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify({ uploadId: 'bare', partNumber, etag: 'bare', size: 0 })); };
  if (req.method !== 'PUT') { req.resume(); req.on('end', answer); return; }
  req.pipe(fs.createWriteStream(dir + '/part-' + (n++))).on('finish', answer);
}).listen(socketPath, () => process.send('ready'));
`;

export interface BareRelay {
  port: number;
  stop(): Promise<void>;
}

/** Starts the server (a child process) and the proxy in front of it; files go to `dir`. */
export async function startBareRelay(dir: string): Promise<BareRelay> {
  fs.mkdirSync(dir, { recursive: true });
  const socketPath = path.join(dir, 'sink.sock');
  const sink: ChildProcess = spawn(process.execPath, ['-e', SINK, socketPath, dir], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await new Promise<void>((resolve, reject) => {
    sink.once('message', () => resolve());
    sink.once('exit', (code) => reject(new Error(`the bare sink exited with ${code}`)));
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const proxy = http.createServer((req, res) => {
    const upstream = http.request({ socketPath, agent, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    port: (proxy.address() as AddressInfo).port,
    stop: async () => {
      agent.destroy();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
      sink.kill();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Deletes what the server wrote, between runs. */
export function clearBareRelay(dir: string): void {
  for (const name of fs.readdirSync(dir)) if (name.startsWith('part-')) fs.rmSync(path.join(dir, name));
}
