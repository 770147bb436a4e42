import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import path from 'node:path';
import type { Pool } from 'pg';
import { readUpTo } from '../http-proxy';
import type { HangarConfig } from '../../domain/config';
import { loadMasterKey } from '../../store/master-key';
import { isPlatformToken, workloadPlatformToken } from '../../domain/workloads/platform-credential';
import type { WorkloadKind } from '../../domain/workloads/workload';
import { sandboxLayout, sandboxesDir } from '../layout';
import { NO_PLATFORM_EGRESS, forwardEgress, providerEgress, type PlatformEgress } from './egress';
import { DEFAULT_READ_LIMIT, MAX_READ_LIMIT, THREAD_ID_PATTERN, ThreadStore, messagesProblem, type ThreadMessage } from '../../store/threads';

/** What one workload's sandbox may do through its platform socket. */
export interface PlatformPolicy {
  sandboxId: string;
  workspaceId: string;
  /** The workload's resource id: its threads belong to it. */
  resourceId: string;
  kind: WorkloadKind;
  /** Where the workload may reach through the socket (an integration server's providers; NO_PLATFORM_EGRESS: nowhere). */
  egress: PlatformEgress;
}

const POLICY_FILE = 'platform-policy.json';
const MAX_BODY_BYTES = 2 * 1024 * 1024;
const THREAD_MESSAGES = /^\/v1\/threads\/([^/?]+)\/messages(?:\?(.*))?$/;
const THREAD = /^\/v1\/threads\/([^/?]+)$/;

class PlatformRequestError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A policy file as an earlier worker may have left it: egress then was a list of origins. */
function storedPolicy(stored: Omit<PlatformPolicy, 'egress'> & { egress?: PlatformEgress | string[] }): PlatformPolicy {
  const { egress } = stored;
  return { ...stored, egress: Array.isArray(egress) ? (egress.length > 0 ? providerEgress(egress) : NO_PLATFORM_EGRESS) : (egress ?? NO_PLATFORM_EGRESS) };
}

/**
 * The node's side of every workload's platform socket (/run/hangar-platform/platform.sock in
 * the sandbox): the agents' thread store, authenticated with the deployment's credential, and
 * allow-listed egress. One listener per sandbox, so a request's sandbox is known from the
 * socket it came through, never from anything the workload says. Policies are kept in the
 * sandbox's folder, so a restarted worker serves the sandboxes that kept running.
 */
export class PlatformServices {
  private readonly servers = new Map<string, { server: http.Server; folder: number }>();
  /** The last open or close of each sandbox's socket: one at a time per sandbox, in call order. */
  private readonly changes = new Map<string, Promise<void>>();
  private readonly threads: ThreadStore;

  constructor(private readonly deps: { dataDir: string; masterKey: Buffer; pg: Pool }) {
    this.threads = new ThreadStore(deps.pg);
  }

  /** A node worker's platform sockets: those of the workloads that kept running while no worker served them, served again. */
  static async forNode(config: HangarConfig, pg: Pool): Promise<PlatformServices> {
    const services = new PlatformServices({ dataDir: config.dataDir, masterKey: loadMasterKey(config), pg });
    await services.restore();
    return services;
  }

  /** The credential the workload in `sandboxId` presents (put in its environment). */
  credential(sandboxId: string): string {
    return workloadPlatformToken(this.deps.masterKey, sandboxId);
  }

  /** Serves the platform socket of a started sandbox under `policy` (again, if it already does). */
  open(policy: PlatformPolicy): Promise<void> {
    return this.oneAtATime(policy.sandboxId, async () => {
      const layout = sandboxLayout(this.deps.dataDir, policy.sandboxId);
      await fsp.writeFile(path.join(layout.root, POLICY_FILE), JSON.stringify(policy), { mode: 0o600 });
      await this.listen(policy);
    });
  }

  close(sandboxId: string): Promise<void> {
    return this.oneAtATime(sandboxId, async () => {
      await this.stopListening(sandboxId);
      const layout = sandboxLayout(this.deps.dataDir, sandboxId);
      await fsp.rm(path.join(layout.root, POLICY_FILE), { force: true });
    });
  }

  /** Two starts of one revision (a retried activity beside the first) must not race for its socket path. */
  private oneAtATime(sandboxId: string, change: () => Promise<void>): Promise<void> {
    const next = (this.changes.get(sandboxId) ?? Promise.resolve()).catch(() => undefined).then(change);
    this.changes.set(sandboxId, next);
    const forget = () => {
      if (this.changes.get(sandboxId) === next) this.changes.delete(sandboxId);
    };
    next.then(forget, forget);
    return next;
  }

  /** Serves every sandbox on this node that has a policy (after a worker restart). */
  async restore(): Promise<void> {
    const ids = await fsp.readdir(sandboxesDir(this.deps.dataDir)).catch(() => [] as string[]);
    for (const id of ids) {
      let policy: PlatformPolicy;
      try {
        policy = storedPolicy(JSON.parse(await fsp.readFile(path.join(sandboxLayout(this.deps.dataDir, id).root, POLICY_FILE), 'utf8')));
      } catch {
        continue;
      }
      await this.oneAtATime(id, () => this.listen(policy)).catch((err: Error) => console.error(`platform socket of ${id}: ${err.message}`));
    }
  }

  /** Stops serving (the worker is stopping); the policies stay for the next worker. */
  async closeAll(): Promise<void> {
    await Promise.all([...this.servers.keys()].map((id) => this.stopListening(id)));
  }

  private async listen(policy: PlatformPolicy): Promise<void> {
    await this.stopListening(policy.sandboxId);
    const layout = sandboxLayout(this.deps.dataDir, policy.sandboxId);
    // A socket left by a worker that died is in the way of a new listener.
    await fsp.rm(layout.platformSocket, { force: true });
    // Derived once per listener, not per request.
    const credential = this.credential(policy.sandboxId);
    const server = http.createServer((req, res) => this.handle(policy, credential, req, res));
    server.keepAliveTimeout = 30_000;
    // A socket path holds at most 107 bytes, and a data folder may be deep: the socket is bound
    // through an open descriptor of its folder instead (the kernel resolves the short path to
    // the folder). The descriptor stays open while the server listens, as its close unlinks it.
    const folder = fs.openSync(layout.platformDir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
    const shortPath = `/proc/self/fd/${folder}/${path.basename(layout.platformSocket)}`;
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(shortPath, () => resolve());
      });
      // The sandbox user connects; the folder stays root's, so it cannot replace the socket.
      fs.chmodSync(shortPath, 0o666);
    } catch (err) {
      server.close();
      fs.closeSync(folder);
      throw err;
    }
    this.servers.set(policy.sandboxId, { server, folder });
  }

  private async stopListening(sandboxId: string): Promise<void> {
    const listening = this.servers.get(sandboxId);
    if (!listening) return;
    this.servers.delete(sandboxId);
    await new Promise<void>((resolve) => {
      listening.server.close(() => resolve());
      listening.server.closeAllConnections();
    });
    fs.closeSync(listening.folder);
  }

  private handle(policy: PlatformPolicy, credential: string, req: IncomingMessage, res: ServerResponse): void {
    const target = req.url ?? '/';
    // An absolute URL as the request target: a forward-proxy request, i.e. egress.
    if (!target.startsWith('/')) {
      forwardEgress(req, res, policy.egress);
      return;
    }
    this.serveApi(policy, credential, req, target)
      .then(({ status, body }) => {
        if (body === undefined) res.writeHead(status).end();
        else res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      })
      .catch((err: Error) => {
        // What the request still sends is not read: drained, so the answer reaches the workload.
        req.resume();
        const known = err instanceof PlatformRequestError;
        if (!known) console.error(`platform socket of ${policy.sandboxId}: ${err.message}`);
        res.writeHead(known ? err.status : 500, { 'content-type': 'application/json' });
        res.end(JSON.stringify(known ? { error: err.code, message: err.message } : { error: 'internal_error', message: 'the platform could not serve this request' }));
      });
  }

  private async serveApi(policy: PlatformPolicy, credential: string, req: IncomingMessage, target: string): Promise<{ status: number; body?: unknown }> {
    // Only a POST carries a body that is read.
    if (req.method !== 'POST') req.resume();
    const bearer = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (!isPlatformToken(bearer, credential)) {
      throw new PlatformRequestError(401, 'unauthorized', `send Authorization: Bearer with the deployment credential from $HANGAR_PLATFORM_TOKEN`);
    }
    const messagesRoute = THREAD_MESSAGES.exec(target);
    const threadRoute = THREAD.exec(target);
    if (!messagesRoute && !threadRoute) {
      throw new PlatformRequestError(404, 'not_found', `no platform API at ${req.method} ${target.split('?')[0]}`);
    }
    if (policy.kind !== 'agents') {
      throw new PlatformRequestError(404, 'not_found', 'the thread store is offered to agents only');
    }
    const threadId = decodedOrUndefined((messagesRoute ?? threadRoute)![1]);
    if (threadId === undefined || !THREAD_ID_PATTERN.test(threadId)) {
      throw new PlatformRequestError(400, 'invalid_thread_id', 'a thread id is 1-128 of A-Z a-z 0-9 . _ : -');
    }
    if (threadRoute) {
      if (req.method !== 'DELETE') throw new PlatformRequestError(405, 'method_not_allowed', `use GET or POST on /v1/threads/{id}/messages, DELETE on /v1/threads/{id}`);
      return { status: 200, body: { deleted: await this.threads.forget(policy.resourceId, threadId) } };
    }
    if (req.method === 'GET') {
      const raw = new URLSearchParams(messagesRoute![2] ?? '').get('limit');
      const limit = raw === null ? DEFAULT_READ_LIMIT : Number(raw);
      if (!Number.isInteger(limit) || limit < 1) throw new PlatformRequestError(400, 'invalid_limit', 'limit must be a positive integer');
      return { status: 200, body: { messages: await this.threads.read(policy.resourceId, threadId, Math.min(limit, MAX_READ_LIMIT)) } };
    }
    if (req.method === 'POST') {
      const body = await readJson(req);
      const problem = messagesProblem(body);
      if (problem) throw new PlatformRequestError(400, 'invalid_messages', problem);
      const messages = (body as { messages: ThreadMessage[] }).messages.map(({ role, content }) => ({ role, content }));
      return { status: 201, body: { appended: await this.threads.append(policy.resourceId, threadId, messages) } };
    }
    throw new PlatformRequestError(405, 'method_not_allowed', 'use GET or POST on /v1/threads/{id}/messages');
  }
}

/** A path segment decoded, or undefined for a broken %-escape (a client error, not ours). */
function decodedOrUndefined(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const { body, truncated } = await readUpTo(req, MAX_BODY_BYTES);
  if (truncated) throw new PlatformRequestError(413, 'body_too_large', `the body is larger than ${MAX_BODY_BYTES} bytes`);
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new PlatformRequestError(400, 'invalid_json', 'the body must be JSON');
  }
}
