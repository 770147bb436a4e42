import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { consoleStaticRoutes } from './static-files';
import { consoleFileRelay, consoleTerminalRelay } from './sandbox-relay';

/** dist/console, from this file compiled (dist/api/console) or run from source by jest (api/console). */
function builtConsoleFolder(): string {
  const top = path.resolve(__dirname, '../..');
  return path.join(path.basename(top) === 'dist' ? top : path.join(top, 'dist'), 'console');
}


/** The web console (README "Console"): its files, what it needs to know of the platform, and its relays to sandboxes. */
export default async function consoleRoutes(app: FastifyInstance, options: { root?: string } = {}) {
  const root = options.root ?? builtConsoleFolder();
  app.get('/console/config.json', { config: { public: true, unversioned: true }, schema: { hide: true } }, async (_request, reply) => {
    reply.header('cache-control', 'no-cache');
    return { temporalUiUrl: app.config.temporalUiUrl?.replace(/\/+$/, '') ?? null, temporalNamespace: app.config.temporalNamespace };
  });
  consoleStaticRoutes(app, root);
  consoleFileRelay(app);
  consoleTerminalRelay(app);
}
