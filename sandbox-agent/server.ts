import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { AGENT_VERSION, type AgentConfig } from './contract/agent-config';
import { matchRoute, publicEndpoints, type AgentOperation } from './contract/routes';
import type { AgentActivity, AgentHealth, AgentIndex, AgentReload } from './contract/service';
import { SandboxFiles } from './filesystem';
import { fileTreeRoutes } from './file-tree-routes';
import { filesystemRoutes } from './filesystem-routes';
import { PathPolicy } from './fs-paths';
import { HttpError, sendError, sendJson } from './http';
import { multipartUploadRoutes } from './multipart-upload-routes';
import { openMultipartUploads } from './multipart-uploads';
import { networkRoutes } from './network-routes';
import { PortForwards } from './port-forward';
import { PortMonitor } from './port-monitor';
import { ProcessManager } from './process-manager';
import { processRoutes } from './process-routes';
import { searchRoutes } from './search-routes';
import type { RouteHandler, RouteHandlers, UpgradeHandler } from './route-handler';
import { terminalRoutes } from './terminal-routes';

/**
 * The processes' environment as the configuration file says now: the host rewrites the file in
 * place when the sandbox's envs are updated (the reference's sandbox-api re-reads its metadata the
 * same way), so a process started afterwards sees the new values and running ones keep theirs. A
 * read that meets the file mid-rewrite keeps the last environment read.
 */
function currentEnvironment(loadConfig: () => AgentConfig, first: AgentConfig): () => Record<string, string> {
  let last = first.processEnv;
  return () => {
    try {
      last = loadConfig().processEnv;
    } catch {
      // Mid-rewrite: the previous values stand.
    }
    return last;
  };
}

/** What the API serves for one configuration: the handlers of its configuration-bound routes. */
function buildApi(config: AgentConfig, loadConfig: () => AgentConfig) {
  const files = new SandboxFiles(new PathPolicy(config.writableRoots, config.hiddenRoots), config.writableRoots);
  // One source of the environment for everything that starts a program in the sandbox.
  const env = currentEnvironment(loadConfig, config);
  const processes = new ProcessManager({ env, defaultWorkingDir: config.defaultWorkingDir });
  const monitor = new PortMonitor({ eventLog: config.eventLog, sandbox: config.sandboxName });
  const uploads = openMultipartUploads(path.dirname(config.eventLog), files);
  let mcp: RouteHandler | undefined;
  // The MCP SDK loads on the first /mcp request: it would triple the agent's start time. A
  // require() rather than import(): the agent is CommonJS, and import() would go through Node's
  // ESM loader.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const loadMcp = (): RouteHandler => (require('./mcp') as typeof import('./mcp')).createMcpHandler({ files, processes });
  const terminal = terminalRoutes({ env, defaultWorkingDir: config.defaultWorkingDir });
  /** The routes that take HTTP upgrades (WebSocket), by operation. */
  const upgrades: Partial<Record<AgentOperation, UpgradeHandler>> = { ...terminal.upgrades };
  return {
    config,
    uploads,
    processes,
    startedAt: new Date(),
    handlers: {
      ...filesystemRoutes(files),
      ...searchRoutes(files, { processEnv: env }),
      ...processRoutes(processes),
      ...fileTreeRoutes(files),
      ...multipartUploadRoutes(files, uploads),
      ...networkRoutes(monitor, new PortForwards(path.dirname(config.eventLog))),
      mcp: (req, res, context) => (mcp ??= loadMcp())(req, res, context),
      ...terminal.handlers,
    } satisfies Partial<RouteHandlers<AgentOperation>>,
    upgrades,
  };
}

/** How requests are being served, for the host's view of the sandbox's idleness. */
interface Traffic {
  inflight: number;
  lastRequestAt: Date;
  /** Anything but /health and /internal/ was asked: a pre-started sandbox is taken. */
  used: boolean;
}

/**
 * The sandbox API: one HTTP server on a Unix socket. Every request is matched against the
 * contract's route table (sandbox-agent/contract/routes.ts) and handled by its operation's
 * handler; the compiler sees that every operation of the table has one. Only Node's own modules
 * load at start; the MCP SDK loads on the first /mcp request.
 *
 * `loadConfig` reads the host's configuration file. POST /internal/reload reads it again and
 * starts afresh: the host uses it to hand a pre-started sandbox to its owner. It only works
 * before the API served anything else, so nobody can make it forget processes it started.
 */
export function createAgentServer(loadConfig: () => AgentConfig): http.Server {
  let api = buildApi(loadConfig(), loadConfig);
  const traffic: Traffic = { inflight: 0, lastRequestAt: api.startedAt, used: false };

  const index: RouteHandler = async (_req, res) =>
    sendJson(res, 200, { name: 'hangar-sandbox-api', version: AGENT_VERSION, sandbox: api.config.sandboxName, endpoints: publicEndpoints() } satisfies AgentIndex);
  const service: RouteHandlers<'index' | 'health' | 'activity' | 'reload'> = {
    index,
    health: async (_req, res) => {
      const { startedAt } = api;
      const uptimeSeconds = Math.floor((Date.now() - startedAt.getTime()) / 1000);
      sendJson(res, 200, { status: 'ok', version: AGENT_VERSION, startedAt: startedAt.toISOString(), uptimeSeconds } satisfies AgentHealth);
    },
    activity: async (_req, res) => {
      const keepAliveProcesses = api.processes.list().filter((p) => p.isRunning && p.request.keepAlive).length;
      sendJson(res, 200, { inflightRequests: traffic.inflight - 1, lastRequestAt: traffic.lastRequestAt.toISOString(), keepAliveProcesses } satisfies AgentActivity);
    },
    reload: async (_req, res) => {
      if (traffic.used) throw new HttpError(409, 'the sandbox API is in use: only a fresh sandbox reloads its configuration');
      api.uploads.stopSweeping();
      api = buildApi(loadConfig(), loadConfig);
      handlers = { ...api.handlers, ...service };
      traffic.lastRequestAt = api.startedAt;
      sendJson(res, 200, { sandbox: api.config.sandboxName, message: 'Configuration reloaded' } satisfies AgentReload);
    },
  };
  // Every operation of the contract has its handler, or this does not compile.
  let handlers: RouteHandlers<AgentOperation> = { ...api.handlers, ...service };

  async function route(req: IncomingMessage, res: ServerResponse, pathname: string, query: URLSearchParams): Promise<void> {
    const match = matchRoute(req.method ?? 'GET', pathname);
    if (match === undefined) throw new HttpError(404, `no such endpoint: ${req.method} ${pathname}`);
    if (match === 'method-not-allowed') throw new HttpError(405, `${req.method} is not allowed on ${pathname}`);
    return handlers[match.route.operation](req, res, { params: match.params, query });
  }

  /** An upgrade goes to its route's upgrade handler; any other is refused as any request is. */
  function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const { pathname, query } = splitTarget(req.url);
    const match = matchRoute(req.method ?? 'GET', pathname);
    const handler = typeof match === 'object' ? api.upgrades[match.route.operation] : undefined;
    if (typeof match !== 'object' || !handler) return refuseUpgrade(socket, new HttpError(404, `no WebSocket endpoint: ${req.method} ${pathname}`));
    try {
      handler(req, socket, head, { params: match.params, query });
    } catch (err) {
      refuseUpgrade(socket, err);
    }
  }

  const server = http.createServer((req, res) => {
    countRequest(traffic, req, res);
    const { pathname, query } = splitTarget(req.url);
    route(req, res, pathname, query).catch((err) => sendError(res, err));
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // An open WebSocket (a terminal) is a request in flight: the sandbox is not idle while it lasts.
    countRequest(traffic, req, socket);
    upgrade(req, socket, head);
  });
  // Long-running commands and log streams keep requests open for as long as they need.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  return server;
}

/**
 * A request target's path and query. The raw path, not a parsed URL: URL parsing would quietly
 * resolve '..' and '%2e%2e', and the filesystem API must see (and refuse) them.
 */
function splitTarget(target = '/'): { pathname: string; query: URLSearchParams } {
  const queryAt = target.indexOf('?');
  return { pathname: queryAt < 0 ? target : target.slice(0, queryAt), query: new URLSearchParams(queryAt < 0 ? '' : target.slice(queryAt + 1)) };
}

/** Answers an upgrade that cannot be served with the API's error shape (`{"error": ...}`), and closes it. */
function refuseUpgrade(socket: Duplex, err: unknown): void {
  const status = err instanceof HttpError ? err.status : 500;
  const body = JSON.stringify({ error: err instanceof HttpError ? err.message : `internal error: ${(err as Error)?.message ?? 'unknown'}` });
  socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

/**
 * A request is in flight until its response (or its upgraded connection) closes; the host's own
 * calls do not count as use.
 */
function countRequest(traffic: Traffic, req: IncomingMessage, res: ServerResponse | Duplex): void {
  const counted = req.url !== '/health' && !req.url?.startsWith('/internal/');
  traffic.inflight++;
  if (counted) {
    traffic.used = true;
    traffic.lastRequestAt = new Date();
  }
  res.on('close', () => {
    traffic.inflight--;
    if (counted) traffic.lastRequestAt = new Date();
  });
}
