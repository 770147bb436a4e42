import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import path from 'node:path';
import { AGENT_VERSION, type AgentConfig } from './contract/agent-config';
import { SandboxFiles } from './filesystem';
import { filesystemRoutes } from './filesystem-routes';
import { PathPolicy } from './fs-paths';
import { HttpError, sendError, sendJson } from './http';
import { networkRoutes } from './network-routes';
import { PortForwards } from './port-forward';
import { PortMonitor } from './port-monitor';
import { ProcessManager } from './process-manager';
import { processRoutes } from './process-routes';
import { isListedPath, publicEndpoints } from './contract/routes';

type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** Everything the API serves for one configuration. */
function buildApi(config: AgentConfig) {
  const files = new SandboxFiles(new PathPolicy(config.writableRoots, config.hiddenRoots), config.writableRoots);
  const processes = new ProcessManager({ env: config.processEnv, defaultWorkingDir: config.defaultWorkingDir });
  const monitor = new PortMonitor({ eventLog: config.eventLog, sandbox: config.sandboxName });
  let mcp: Handler | undefined;
  return {
    config,
    startedAt: new Date(),
    filesystem: filesystemRoutes(files),
    process: processRoutes(processes),
    network: networkRoutes(monitor, new PortForwards(path.dirname(config.eventLog))),
    mcp(): Handler {
      mcp ??= (require('./mcp') as typeof import('./mcp')).createMcpHandler({ files, processes });
      return mcp;
    },
  };
}

/**
 * The sandbox API: one HTTP server on a Unix socket, routing by path prefix; routes.ts lists the
 * routes and which of them only the host may call. Only Node's own
 * modules load at start; the MCP SDK loads on the first /mcp request.
 *
 * `loadConfig` reads the host's configuration file. POST /internal/reload reads it again and
 * starts afresh: the host uses it to hand a pre-started sandbox to its owner. It only works
 * before the API served anything else, so nobody can make it forget processes it started.
 */
export function createAgentServer(loadConfig: () => AgentConfig): http.Server {
  let api = buildApi(loadConfig());
  let inflight = 0;
  let lastRequestAt = api.startedAt;
  let used = false;

  async function route(req: IncomingMessage, res: ServerResponse, pathname: string, query: URLSearchParams): Promise<void> {
    if (!isListedPath(pathname)) throw new HttpError(404, `no such endpoint: ${req.method} ${pathname}`);
    if (pathname === '/health') {
      const { startedAt } = api;
      return sendJson(res, 200, { status: 'ok', version: AGENT_VERSION, startedAt: startedAt.toISOString(), uptimeSeconds: Math.floor((Date.now() - startedAt.getTime()) / 1000) });
    }
    if (pathname === '/internal/activity') {
      return sendJson(res, 200, { inflightRequests: inflight - 1, lastRequestAt: lastRequestAt.toISOString() });
    }
    if (pathname === '/internal/reload' && req.method === 'POST') {
      if (used) throw new HttpError(409, 'the sandbox API is in use: only a fresh sandbox reloads its configuration');
      api = buildApi(loadConfig());
      lastRequestAt = api.startedAt;
      return sendJson(res, 200, { sandbox: api.config.sandboxName, message: 'Configuration reloaded' });
    }
    const [, head = '', ...tail] = pathname.split('/');
    const rest = tail.join('/');
    switch (head) {
      case '':
        if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpError(405, `${req.method} is not allowed on /`);
        return sendJson(res, 200, {
          name: 'hangar-sandbox-api',
          version: AGENT_VERSION,
          sandbox: api.config.sandboxName,
          endpoints: publicEndpoints(),
        });
      case 'filesystem':
        return api.filesystem(req, res, rest, query);
      case 'process':
        return api.process(req, res, rest);
      case 'network':
        return api.network(req, res, rest);
      case 'mcp':
        if (rest !== '') break;
        return api.mcp()(req, res);
    }
    throw new HttpError(404, `no such endpoint: ${req.method} ${pathname}`);
  }

  const server = http.createServer((req, res) => {
    const counted = req.url !== '/health' && !req.url?.startsWith('/internal/');
    inflight++;
    if (counted) {
      used = true;
      lastRequestAt = new Date();
    }
    res.on('close', () => {
      inflight--;
      if (counted) lastRequestAt = new Date();
    });
    // The raw path, not a parsed URL: URL parsing would quietly resolve '..' and '%2e%2e',
    // and the filesystem API must see (and refuse) them.
    const target = req.url ?? '/';
    const queryAt = target.indexOf('?');
    const pathname = queryAt < 0 ? target : target.slice(0, queryAt);
    const query = new URLSearchParams(queryAt < 0 ? '' : target.slice(queryAt + 1));
    route(req, res, pathname, query).catch((err) => sendError(res, err));
  });
  // Long-running commands and log streams keep requests open for as long as they need.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  return server;
}
