import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { badRequest } from '../../domain/errors';

/**
 * PostgreSQL text and jsonb cannot hold NUL characters or unpaired UTF-16 surrogates; without
 * this check such input would fail deep in a query as a 500. Answer 400 naming the field instead.
 */
export function findUnstorableString(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) return `${path} contains a NUL character`;
    if (!value.isWellFormed()) return `${path} contains an unpaired surrogate (invalid Unicode)`;
    return undefined;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const problem = findUnstorableString(value[i], `${path}[${i}]`);
      if (problem) return problem;
    }
    return undefined;
  }
  if (value && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      const problem = findUnstorableString(key, `${path} key`) ?? findUnstorableString(child, `${path}.${key}`);
      if (problem) return problem;
    }
  }
  return undefined;
}

export default fp(async function inputHygiene(app: FastifyInstance) {
  app.addHook('preValidation', async (request) => {
    // A body kept as bytes (usage ingestion) is checked by its route, field by field.
    const problem =
      (Buffer.isBuffer(request.body) ? undefined : findUnstorableString(request.body, 'body')) ??
      findUnstorableString(request.query, 'query') ??
      findUnstorableString(request.params, 'path');
    if (problem) throw badRequest(problem);
  });
});
