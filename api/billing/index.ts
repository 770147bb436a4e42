import type { FastifyInstance } from 'fastify';
import { queryFingerprint } from '../../domain/billing/cursor';
import { InvalidInput } from '../../domain/billing/errors';
import { GROUP_BY_DIMENSIONS, parseMetricsQuery, parseWindowQuery } from '../../domain/billing/metrics-query';
import type { MetricsScope } from '../../domain/billing/metrics-sql';
import { usageTables } from '../../domain/billing/storage';
import type { Principal } from '../../domain/principal';
import { acceptUsageBatch, loadPrices, UsageConflict } from '../../store/usage-outbox';
import { encodeUsageBody } from '../../domain/billing/usage-body';
import { ApiError, badRequest, forbidden, notFound } from '../../domain/errors';
import { commonErrors, ErrorBody } from '../management/common-schemas';
import { MetricsReader } from './metrics-reader';
import {
  AccountParams,
  EnumResponse,
  MetricsQuerySchema,
  MetricsResponseSchema,
  UsageEventsAccepted,
  UsageEventsBody,
  WindowQuery,
} from './schemas';

/** 10,000 events with long names and ids: above the platform-wide default body limit. */
const INGEST_BODY_LIMIT = 32 * 1024 * 1024;

/** Billing: metrics (endpoints 14-16) and usage-event ingestion. */
export default async function billingRoutes(app: FastifyInstance) {
  // Validation is done by core/billing, which names parameters and fields exactly and sees the
  // values as sent; the schemas stay for the OpenAPI document.
  app.setValidatorCompiler(() => () => true);
  const tables = usageTables(app.config.clickhouseDatabase);
  const reader = new MetricsReader(app.clickhouse, app.pg, app.log);
  const scopeOf = (principal: Principal, accountId: string): MetricsScope => ({
    tables,
    accountId,
    // A caller who is not an account admin sees only the workspaces they belong to.
    visibleWorkspaces: principal.accountAdmin ? undefined : [...principal.workspaces.keys()].sort(),
  });

  app.get(
    '/v0/accounts/:accountId/metrics',
    {
      schema: {
        tags: ['billing'],
        summary: 'Cost and usage of an account, grouped and bucketed over time',
        params: AccountParams,
        querystring: MetricsQuerySchema,
        response: { 200: MetricsResponseSchema, ...commonErrors, 503: ErrorBody },
      },
    },
    async (request) => {
      const accountId = memberAccount(request.principal, request.params);
      const query = await asBadRequest(() => parseMetricsQuery(request.query as Record<string, unknown>));
      if (!request.principal.accountAdmin) {
        if (query.filters.workspace !== undefined) throw forbidden('the workspace parameter is reserved to account admins');
        if (query.groupBy.includes('workspace')) throw forbidden('groupBy workspace is reserved to account admins');
      }
      const scope = scopeOf(request.principal, accountId);
      const fingerprint = queryFingerprint(accountId, query, scope.visibleWorkspaces);
      return await asBadRequest(() => reader.metrics(scope, query, fingerprint));
    },
  );

  app.get(
    '/v0/accounts/:accountId/metrics/enums/group-by',
    {
      schema: {
        tags: ['billing'],
        summary: 'Valid groupBy values',
        params: AccountParams,
        response: { 200: EnumResponse, ...commonErrors },
      },
    },
    async (request) => {
      memberAccount(request.principal, request.params);
      await asBadRequest(() => parseNoQuery(request.query as Record<string, unknown>));
      return { values: [...GROUP_BY_DIMENSIONS] };
    },
  );

  app.get(
    '/v0/accounts/:accountId/metrics/enums/resource-types',
    {
      schema: {
        tags: ['billing'],
        summary: 'Resource types with at least one usage event in the window',
        params: AccountParams,
        querystring: WindowQuery,
        response: { 200: EnumResponse, ...commonErrors, 503: ErrorBody },
      },
    },
    async (request) => {
      const accountId = memberAccount(request.principal, request.params);
      const window = await asBadRequest(() => parseWindowQuery(request.query as Record<string, unknown>));
      return { values: await reader.resourceTypes(scopeOf(request.principal, accountId), window) };
    },
  );

  // Ingestion reads its body itself: kept as bytes until parsed, so that the thousands of event
  // objects of a request die young (see domain/billing/usage-batch.ts).
  await app.register(async function ingestion(scope) {
    scope.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: INGEST_BODY_LIMIT }, (_request, body, done) => done(null, body));
    scope.post(
      '/v0/accounts/:accountId/usage-events',
      {
        bodyLimit: INGEST_BODY_LIMIT,
        schema: {
          tags: ['billing'],
          summary: 'Ingest usage events (account admins)',
          description: 'At most 10,000 events per request; 202 once they are durably accepted. Idempotent on id.',
          params: AccountParams,
          body: UsageEventsBody,
          response: { 202: UsageEventsAccepted, ...commonErrors, 409: ErrorBody },
        },
      },
      async (request, reply) => {
        const accountId = memberAccount(request.principal, request.params);
        if (!request.principal.accountAdmin) throw forbidden('ingesting usage events is reserved to account admins');
        // Prices first, so that parsing and encoding run with no await between them (which
        // acceptUsageEvents, given parsed events, cannot offer): no event object outlives them.
        const prices = await loadPrices(app.pg, accountId);
        const batch = await asBadRequest(() => encodeUsageBody(accountId, request.body as Buffer, Date.now(), prices));
        try {
          const result = await asBadRequest(() => acceptUsageBatch(app.pg, batch));
          return reply.status(202).send(result);
        } catch (err) {
          if (err instanceof UsageConflict) throw new ApiError(409, 'conflict', err.message, { index: err.index, field: 'id' });
          throw err;
        }
      },
    );
  });
}

/** The account of the path, when the caller belongs to it; 404 otherwise (nothing is revealed). */
function memberAccount(principal: Principal, params: unknown): string {
  const { accountId } = params as { accountId: string };
  if (accountId !== principal.accountId) throw notFound(`account '${accountId}' not found`);
  return accountId;
}

function parseNoQuery(query: Record<string, unknown>): void {
  const name = Object.keys(query)[0];
  if (name !== undefined) throw new InvalidInput(name, `unsupported query parameter '${name}'`);
}

function invalidInputError(err: InvalidInput): ApiError {
  return err.index === undefined ? badRequest(err.message) : badRequest(err.message, { index: err.index, field: err.parameter });
}

/** Runs `work`, turning a client mistake found by core/billing into a 400. */
async function asBadRequest<T>(work: () => T | Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw err instanceof InvalidInput ? invalidInputError(err) : err;
  }
}
