import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';

/** Content types of the files a Vite build writes; anything else is served as bytes. */
const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.woff2': 'font/woff2',
  '.map': 'application/json; charset=utf-8',
};

/**
 * Everything the console loads and calls is its own origin's: no script or style from elsewhere
 * runs, and no page may frame it. Inline styles stay allowed: xterm.js and uPlot size their
 * elements with them.
 */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/** Files under assets/ carry a hash of their content in their name: a browser may keep them for good. */
const HASHED_ASSET = /^assets\/[^/]+-[A-Za-z0-9_-]{8,}\.[a-z0-9]+$/;

/** The file a request path names inside `root`, or undefined when it names none (or tries to leave root). */
export function consoleFile(root: string, requestPath: string): string | undefined {
  let relative: string;
  try {
    relative = decodeURIComponent(requestPath).replace(/^\/+/, '');
  } catch {
    return undefined;
  }
  if (relative.includes('\0')) return undefined;
  const file = path.resolve(root, relative);
  if (file !== root && !file.startsWith(root + path.sep)) return undefined;
  return fs.statSync(file, { throwIfNoEntry: false })?.isFile() ? file : undefined;
}

function sendFile(reply: FastifyReply, root: string, file: string): FastifyReply {
  const relative = path.relative(root, file).split(path.sep).join('/');
  const type = CONTENT_TYPES[path.extname(file)] ?? 'application/octet-stream';
  // index.html names the hashed assets of the current build: always asked again, so a new build shows at once.
  const caching = HASHED_ASSET.test(relative) ? 'public, max-age=31536000, immutable' : 'no-cache';
  return reply
    .header('content-type', type)
    .header('cache-control', caching)
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', CONTENT_SECURITY_POLICY)
    .send(fs.createReadStream(file));
}

/**
 * The web console at /console: the files Vite compiled into dist/console (npm run build), served
 * as they are. A path that is not a file gets index.html, so that the console's own routes
 * (/console/billing, ...) survive a reload. Public: the console's data comes from the API, with the
 * credential the person signs in with.
 */
export function consoleStaticRoutes(app: FastifyInstance, root: string): void {
  const index = path.join(root, 'index.html');
  const serve = (requestPath: string, reply: FastifyReply) => {
    const file = consoleFile(root, requestPath);
    if (file) return sendFile(reply, root, file);
    if (requestPath.startsWith('assets/')) return reply.code(404).send({ error: 'not_found', message: `no console asset ${requestPath}` });
    if (!fs.existsSync(index)) {
      return reply.code(404).send({ error: 'not_found', message: 'the console is not built: run npm run build' });
    }
    return sendFile(reply, root, index);
  };
  const options = { config: { public: true, unversioned: true }, schema: { hide: true } };
  app.get('/console', options, (_request, reply) => reply.redirect('/console/'));
  app.get('/console/*', options, (request, reply) => serve((request.params as { '*': string })['*'], reply));
}
