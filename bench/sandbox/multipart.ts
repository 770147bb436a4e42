import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { buildSandboxGatewayApp } from '../../api/gateway/sandbox-app';
import { formatTable } from '../../domain/text-table';
import { benchConfig, createBenchSandbox, startBenchPlatform } from '../common/platform';
import { percentile } from '../common/stats';
import { clearBareRelay, startBareRelay } from './bare-upload-relay';

/**
 * Multipart upload through the sandbox gateway, the way the reference SDK's fs.write sends a big
 * file (5 MiB parts, 3 at a time, then complete), next to its floor: `cp` of the same bytes on the
 * host, into the same data folder. The ratio is the upload's throughput over cp's (target >= 0.3).
 * A second floor is the same upload through a bare Node relay (bare-upload-relay.ts): the same
 * processes and hops moving bytes and nothing else, the ceiling of any Node gateway and sandbox API.
 * Run by hand after a build, as root: `node dist/bench/sandbox/multipart.js`.
 * Options (environment): BENCH_MULTIPART_MB (200), BENCH_RUNS (3), BENCH_PHASES=1 (print each upload's
 * time sending parts and completing).
 */
const SIZE = Number(process.env.BENCH_MULTIPART_MB ?? 200) * 1024 * 1024;
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const PART_BYTES = 5 * 1024 * 1024;
const PARALLEL_PARTS = 3;

const log = (line: string) => console.log(line);

/** Where the sandbox answers, through a gateway listening on a real socket. */
interface SandboxTarget {
  port: number;
  host: string;
  basePath: string;
  authorization: string;
}

/** One request; a body given in pieces is written piece by piece (a part's bytes are not copied into one buffer). */
function call(target: SandboxTarget, method: string, route: string, body?: string | Buffer[], contentType = 'application/json'): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { host: target.host, authorization: target.authorization };
    const pieces = typeof body === 'string' ? [Buffer.from(body)] : body;
    if (pieces) Object.assign(headers, { 'content-type': contentType, 'content-length': pieces.reduce((sum, piece) => sum + piece.length, 0) });
    const req = http.request({ host: '127.0.0.1', port: target.port, method, path: `${target.basePath}${route}`, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined });
      });
    });
    req.on('error', reject);
    for (const piece of pieces ?? []) req.write(piece);
    req.end();
  });
}

/** One upload of `data` to `file`, as the SDK's uploadWithMultipart does it; milliseconds. */
async function upload(target: SandboxTarget, data: Buffer, file: string): Promise<number> {
  const began = performance.now();
  const started = await call(target, 'POST', `/filesystem-multipart/initiate${file}`, JSON.stringify({ permissions: '0644' }));
  if (started.status !== 200) throw new Error(`initiate: ${started.status} ${JSON.stringify(started.json)}`);
  const count = Math.ceil(data.length / PART_BYTES);
  const parts: { partNumber: number; etag: string }[] = [];
  let next = 1;
  const boundary = `----bench${randomBytes(8).toString('hex')}`;
  const worker = async () => {
    for (let n = next++; n <= count; n = next++) {
      const bytes = data.subarray((n - 1) * PART_BYTES, Math.min(n * PART_BYTES, data.length));
      const body = [Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="blob"\r\nContent-Type: application/octet-stream\r\n\r\n`), bytes, Buffer.from(`\r\n--${boundary}--\r\n`)];
      const part = await call(target, 'PUT', `/filesystem-multipart/${started.json.uploadId}/part?partNumber=${n}`, body, `multipart/form-data; boundary=${boundary}`);
      if (part.status !== 200) throw new Error(`part ${n}: ${part.status} ${JSON.stringify(part.json)}`);
      parts.push(part.json);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_PARTS, count) }, worker));
  parts.sort((a, b) => a.partNumber - b.partNumber);
  const partsDone = performance.now();
  const done = await call(target, 'POST', `/filesystem-multipart/${started.json.uploadId}/complete`, JSON.stringify({ parts }));
  if (done.status !== 200) throw new Error(`complete: ${done.status} ${JSON.stringify(done.json)}`);
  if (process.env.BENCH_PHASES) log(`parts ${(partsDone - began).toFixed(0)} ms, complete ${(performance.now() - partsDone).toFixed(0)} ms`);
  return performance.now() - began;
}

/** The uploaded file's size as the sandbox lists it. */
async function sizeInSandbox(target: SandboxTarget, file: string): Promise<number | undefined> {
  const listing = await call(target, 'GET', `/filesystem${path.posix.dirname(file)}`);
  return (listing.json.files as { name: string; size: number }[]).find((f) => f.name === path.posix.basename(file))?.size;
}

async function cpFloor(source: string, dir: string): Promise<number> {
  const target = path.join(dir, `cp-${randomBytes(4).toString('hex')}.bin`);
  const began = performance.now();
  await new Promise<void>((resolve, reject) => execFile('cp', [source, target], (err) => (err ? reject(err) : resolve())));
  const took = performance.now() - began;
  fs.rmSync(target);
  return took;
}

/** A sandbox made through the API, reached through the listening gateway. */
async function readySandbox(platform: Awaited<ReturnType<typeof startBenchPlatform>>, gatewayPort: number): Promise<SandboxTarget & { name: string }> {
  const { name, url } = await createBenchSandbox(platform, `bench-multipart-${Date.now().toString(36)}`, 1024);
  return { name, port: gatewayPort, host: url.host, basePath: url.pathname.replace(/\/$/, ''), authorization: `Bearer ${platform.credentials.apiKey}` };
}

async function main() {
  // Ports below the kernel's ephemeral range (32768-60999): no client connection of another process can hold one.
  const platform = await startBenchPlatform(benchConfig('sandbox-multipart', 29480), log);
  const gateway = await buildSandboxGatewayApp(platform.config, platform.runtime);
  await gateway.listen({ host: '127.0.0.1', port: 0 });
  const scratch = path.join(platform.config.dataDir, 'bench-multipart');
  fs.mkdirSync(scratch, { recursive: true });
  let sandboxName: string | undefined;
  try {
    const target = await readySandbox(platform, (gateway.server.address() as AddressInfo).port);
    sandboxName = target.name;
    const data = randomBytes(SIZE);
    const source = path.join(scratch, 'source.bin');
    fs.writeFileSync(source, data);
    // Once each outside the timings: page cache, the agent's first parse, the first connections.
    await cpFloor(source, scratch);
    await upload(target, data.subarray(0, PART_BYTES * 2), '/tmp/warm.bin');
    const relay = await startBareRelay(path.join(scratch, 'bare'));
    const bareTarget = { port: relay.port, host: '127.0.0.1', basePath: '', authorization: '' };
    const uploads: number[] = [];
    const copies: number[] = [];
    const bare: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      copies.push(await cpFloor(source, scratch));
      bare.push(await upload(bareTarget, data, '/bare.bin'));
      clearBareRelay(path.join(scratch, 'bare'));
      uploads.push(await upload(target, data, `/tmp/upload-${i}.bin`));
      const size = await sizeInSandbox(target, `/tmp/upload-${i}.bin`);
      if (size !== SIZE) throw new Error(`the uploaded file has ${size} bytes, not ${SIZE}`);
      await call(target, 'DELETE', `/filesystem/tmp/upload-${i}.bin`);
    }
    await relay.stop();
    printRatio(uploads, copies, bare);
  } finally {
    if (sandboxName) await platform.app.inject({ method: 'DELETE', url: `/v0/sandboxes/${sandboxName}`, headers: { authorization: `Bearer ${platform.credentials.apiKey}`, 'x-service-workspace': platform.credentials.workspace } });
    fs.rmSync(scratch, { recursive: true, force: true });
    await gateway.close();
    await platform.stop();
  }
}

function printRatio(uploads: number[], copies: number[], bare: number[]): void {
  const mb = SIZE / 1024 / 1024;
  const upload = percentile(uploads, 50);
  const copy = percentile(copies, 50);
  const relay = percentile(bare, 50);
  const rate = (ms: number) => (mb / (ms / 1000)).toFixed(0);
  const what = `multipart upload of ${mb} MiB (5 MiB parts, ${PARALLEL_PARTS} at a time)`;
  log(
    '\n' +
      formatTable(
        ['measure', 'p50 ms', 'MiB/s', 'floor', 'p50 ms', 'MiB/s', 'ratio', 'target'],
        [
          [`${what} through the gateway`, upload.toFixed(0), rate(upload), `cp of ${mb} MiB on the host`, copy.toFixed(0), rate(copy), (copy / upload).toFixed(2), '>= 0.3'],
          [`the same through a bare Node relay`, relay.toFixed(0), rate(relay), `cp of ${mb} MiB on the host`, copy.toFixed(0), rate(copy), (copy / relay).toFixed(2), ''],
          [`${what} through the gateway`, upload.toFixed(0), rate(upload), 'the bare Node relay', relay.toFixed(0), rate(relay), (relay / upload).toFixed(2), ''],
        ],
      ),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
