import type { FastifyInstance } from 'fastify';

const CHECK_TIMEOUT_MS = 2_000;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]);
}

/**
 * GET /health answers 200 only when every service the API depends on answers, so that
 * `npm start` and load balancers can wait on it; 503 names what is not ready.
 */
export async function healthRoutes(app: FastifyInstance) {
  const startedAt = new Date();
  const checks: Record<string, () => Promise<unknown>> = {
    postgres: () => app.pg.query('SELECT 1'),
    clickhouse: async () => {
      const result = await app.clickhouse.ping();
      if (!result.success) throw result.error;
    },
    temporal: () => app.temporal.workflowService.getSystemInfo({}),
  };

  app.get(
    '/health',
    { config: { public: true, unversioned: true }, schema: { tags: ['health'], security: [] } },
    async (_request, reply) => {
      const entries = await Promise.all(
        Object.entries(checks).map(async ([name, check]) => {
          try {
            await withTimeout(check(), CHECK_TIMEOUT_MS);
            return [name, 'ok'] as const;
          } catch (err) {
            return [name, `unavailable: ${(err as Error).message}`] as const;
          }
        }),
      );
      const services = Object.fromEntries(entries);
      const ok = entries.every(([, state]) => state === 'ok');
      return reply.status(ok ? 200 : 503).send({
        status: ok ? 'ok' : 'unavailable',
        services,
        startedAt: startedAt.toISOString(),
        uptimeSeconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
      });
    },
  );
}
