import Fastify, { type FastifyInstance, type FastifyReply, type FastifyServerOptions, type RouteOptions } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { HangarConfig } from '../domain/config';
import errors from './plugins/errors';
import { exactBodyValidators } from './validators';
import './fastify-decorations';

export interface AppOptions {
  /** Log level; no logging when absent (tests). */
  logLevel?: string;
  /** Where log lines go (default stdout); tests capture them to prove no secret is logged. */
  logStream?: NodeJS.WritableStream;
  /** Told of every route as it is registered, schemas included (tests derive their checks from them). */
  onRoute?: (route: RouteOptions) => void;
}

/** Never log credentials: request logs carry method, path (no query) and id only. */
function loggerOptions(level: string | undefined, stream?: NodeJS.WritableStream): FastifyServerOptions['logger'] {
  if (!level) return false;
  return {
    level,
    ...(stream ? { stream } : {}),
    serializers: {
      req: (req: { method: string; url: string; id: string }) => ({ method: req.method, url: req.url.split('?')[0], id: req.id }),
    },
  };
}

/** Errors the router raises before any route runs (bad URL encoding, over-long path parameters). */
const ROUTER_ERRORS: Record<string, { status: number; code: string }> = {
  FST_ERR_BAD_URL: { status: 400, code: 'bad_request' },
  FST_ERR_MAX_PARAM_LENGTH: { status: 414, code: 'uri_too_long' },
};

/**
 * Every listener (base_url, run_url, sandbox gateway) starts from this: the same logging rules,
 * request ids, body limit and JSON errors, with the configuration decorated on the instance.
 */
export async function createFastify(config: HangarConfig, options: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: loggerOptions(options.logLevel, options.logStream),
    bodyLimit: config.bodyLimitBytes,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    schemaController: { compilersFactory: { buildValidator: exactBodyValidators() } },
    frameworkErrors: (err, _request, reply: FastifyReply) => {
      const known = ROUTER_ERRORS[err.code] ?? { status: 500, code: 'internal' };
      reply.status(known.status).send({ error: known.code, message: known.status === 500 ? 'internal server error' : err.message });
    },
  });
  app.decorate('config', config);
  cutConnectionsAfterGrace(app);
  if (options.onRoute) app.addHook('onRoute', options.onRoute);
  await app.register(errors);
  return app;
}

/** How long a closing listener lets requests in flight finish before it cuts their connections. */
export const CLOSE_GRACE_MS = 5_000;

/**
 * Node's server.close() waits for every connection, and closes only those idle at the moment it
 * is called: a request still in flight then (a gateway's stream that lasts as long as its caller
 * wants, a log follow, an answer still being written) keeps its connection open after it ends,
 * until the client drops it or the keep-alive timeout passes. A closing base_url waited a minute
 * this way in the console's tests. Requests in flight get a grace period, then every connection
 * left is cut.
 */
function cutConnectionsAfterGrace(app: FastifyInstance): void {
  app.addHook('preClose', (done) => {
    setTimeout(() => app.server.closeAllConnections(), CLOSE_GRACE_MS).unref();
    done();
  });
}
