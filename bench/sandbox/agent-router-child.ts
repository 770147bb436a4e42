import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type { AgentConfig } from '../../sandbox-agent/contract/agent-config';
import { AGENT_ROUTES } from '../../sandbox-agent/contract/routes';
import { createAgentServer } from '../../sandbox-agent/server';

/**
 * One idle agent for agent-router.ts, in a process of its own that loads what the agent loads and
 * nothing else: `node agent-router-child.js <variant>`.
 */
export type Variant = 'own matcher' | 'find-my-way';

/** Registers every row of the table in a find-my-way router: `{path}` as a wildcard, `*` as every method. */
function findMyWayRouter(): unknown {
  // Fastify's own copy: the router it ships, as the agent would have it.
  const findMyWay = createRequire(require.resolve('fastify'))('find-my-way') as (options: object) => { on(method: string, path: string, handler: () => void): void };
  const router = findMyWay({ ignoreTrailingSlash: true });
  for (const route of AGENT_ROUTES) {
    const pattern = route.path.replace(/\{path\}$/, '*').replace(/\{(\w+)\}/g, ':$1');
    for (const method of route.method === '*' ? ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'] : [route.method]) router.on(method, pattern, () => undefined);
  }
  return router;
}

/** In the child: an agent idle on its socket, with the router of `variant`. */
function runAgent(variant: Variant): void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-router-'));
  const config: AgentConfig = {
    sandboxId: 'bench',
    sandboxName: 'bench',
    workspaceId: 'bench',
    socketPath: path.join(dir, 'api.sock'),
    eventLog: path.join(dir, 'events.log'),
    processEnv: {},
    defaultWorkingDir: dir,
    writableRoots: [dir],
    hiddenRoots: [],
  };
  const server = createAgentServer(() => config);
  const kept = variant === 'find-my-way' ? findMyWayRouter() : undefined;
  server.listen(config.socketPath, () => process.send?.({ ready: true, kept: kept !== undefined }));
  process.on('SIGTERM', () => {
    fs.rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  });
}

runAgent(process.argv[2] as Variant);
