import { transformFileSync } from '@swc/core';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { BwrapRuntime, type BwrapRuntimeOptions } from '../../runtime/bwrap-runtime';
import type { RuntimeSandboxSpec } from '../../runtime/sandbox-runtime';
import { testConfig } from '../setup/test-config';

const REPO = path.resolve(__dirname, '..', '..');
const AGENT_SOURCES = path.join(REPO, 'sandbox-agent');

/**
 * The agent runs inside the sandbox as JavaScript on disk. Tests build it from the current
 * sources with swc (a fraction of a second), into a folder named by the sources' hash, so test
 * files running in parallel share one build and a stale build is never used.
 */
export function buildAgentForTests(): string {
  // Every .ts under the agent's folder, contract/ included, as paths relative to it.
  const sources = (fs.readdirSync(AGENT_SOURCES, { recursive: true }) as string[]).filter((name) => name.endsWith('.ts')).sort();
  const hash = createHash('sha256');
  for (const name of sources) hash.update(name).update(fs.readFileSync(path.join(AGENT_SOURCES, name)));
  const out = path.join(REPO, '.data-test', `sandbox-agent-${hash.digest('hex').slice(0, 16)}`);
  if (fs.existsSync(path.join(out, 'main.js'))) return out;
  const staging = `${out}.${process.pid}.${randomBytes(4).toString('hex')}`;
  fs.mkdirSync(staging, { recursive: true, mode: 0o755 });
  for (const name of sources) {
    const { code } = transformFileSync(path.join(AGENT_SOURCES, name), {
      jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
      module: { type: 'commonjs' },
    });
    const target = path.join(staging, name.replace(/\.ts$/, '.js'));
    fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o755 });
    fs.writeFileSync(target, code, { mode: 0o644 });
  }
  try {
    fs.renameSync(staging, out);
  } catch {
    // Another test file finished the same build first.
    fs.rmSync(staging, { recursive: true, force: true });
  }
  return out;
}

/** A data folder of its own for one test file, under .data-test (ignored by git). */
export function runtimeDataDir(label: string): string {
  const dir = path.join(REPO, '.data-test', 'runtime', `${label}-${process.pid}-${randomBytes(3).toString('hex')}`);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/**
 * Gives a test's own data folder the suite's node image store (`.data-test/images/oci`, a
 * symbolic link to it), so its runtime finds base-image, the default image, built by the global
 * set-up instead of building it again from Debian's mirror: for runtime tests whose sandboxes run
 * on it (warm pools run on it). Call before the runtime's first start; removing the folder
 * afterwards removes the link only.
 */
export function shareSuiteImages(dataDir: string): string {
  const own = path.join(dataDir, 'images', 'oci');
  fs.mkdirSync(path.dirname(own), { recursive: true });
  fs.symlinkSync(path.join(testConfig().dataDir, 'images', 'oci'), own);
  return dataDir;
}

export function testRuntime(dataDir: string, options: Partial<BwrapRuntimeOptions> = {}): BwrapRuntime {
  return new BwrapRuntime({ dataDir, agentDir: buildAgentForTests(), ...options });
}

let counter = 0;

export function sandboxSpec(overrides: Partial<RuntimeSandboxSpec> = {}): RuntimeSandboxSpec {
  return {
    id: `t${process.pid}-${++counter}-${randomBytes(2).toString('hex')}`,
    workspaceId: 'ws-test',
    image: 'base',
    memoryMb: 256,
    envs: [],
    volumes: [],
    ...overrides,
  };
}

export interface SandboxReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
}

/** One request to a sandbox's API over its socket, as the gateway would send it. */
export function callSandbox(socketPath: string, method: string, urlPath: string, body?: unknown, headers: Record<string, string> = {}): Promise<SandboxReply> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
    const request = http.request(
      {
        socketPath,
        method,
        path: urlPath,
        headers: { ...(payload !== undefined && typeof body === 'object' && !Buffer.isBuffer(body) ? { 'content-type': 'application/json' } : {}), ...headers },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: response.statusCode ?? 0, headers: response.headers, text, json });
        });
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    if (payload !== undefined) request.write(payload);
    request.end();
  });
}

/** Runs a shell command in the sandbox and waits for it. */
export async function exec(socketPath: string, command: string, extra: Record<string, unknown> = {}) {
  const reply = await callSandbox(socketPath, 'POST', '/process', { command, waitForCompletion: true, ...extra });
  if (reply.status !== 200) throw new Error(`POST /process answered ${reply.status}: ${reply.text}`);
  return reply.json as { pid: number; status: string; exitCode: number; stdout: string; stderr: string; logs: string };
}

/** Polls `check` until it returns something truthy, or fails naming `what` after the timeout. */
export async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
