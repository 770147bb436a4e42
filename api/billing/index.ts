import type { FastifyInstance, FastifyRequest } from 'fastify';
import { usageTables } from '../../domain/billing/storage';
import { commonErrors, ErrorBody } from '../management/common-schemas';
import { accountMetrics, groupByDimensions, ingestUsageEvents, usedResourceTypes, type BillingServices } from './billing-service';
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

const tags = ['billing'];
const metricsSchema = {
  tags,
  summary: 'Cost and usage of an account, grouped and bucketed over time',
  params: AccountParams,
  querystring: MetricsQuerySchema,
  response: { 200: MetricsResponseSchema, ...commonErrors, 503: ErrorBody },
};
const groupBySchema = { tags, summary: 'Valid groupBy values', params: AccountParams, response: { 200: EnumResponse, ...commonErrors } };
const resourceTypesSchema = {
  tags,
  summary: 'Resource types with at least one usage event in the window',
  params: AccountParams,
  querystring: WindowQuery,
  response: { 200: EnumResponse, ...commonErrors, 503: ErrorBody },
};
const ingestSchema = {
  tags,
  summary: 'Ingest usage events (account admins)',
  description: 'At most 10,000 events per request; 202 once they are durably accepted. Idempotent on id.',
  params: AccountParams,
  body: UsageEventsBody,
  response: { 202: UsageEventsAccepted, ...commonErrors, 409: ErrorBody },
};

// Validation is done by domain/billing, which names parameters and fields exactly and sees the
// values as sent: the handlers read params and query as they came.
const accountOf = (request: FastifyRequest) => (request.params as { accountId: string }).accountId;
const queryOf = (request: FastifyRequest) => request.query as Record<string, unknown>;

/** Billing: metrics (endpoints 14-16) and usage-event ingestion (billing-service.ts). */
export default async function billingRoutes(app: FastifyInstance) {
  // The schemas stay for the OpenAPI document.
  app.setValidatorCompiler(() => () => true);
  const services: BillingServices = { reader: new MetricsReader(app.clickhouse, app.pg, app.log), tables: usageTables(app.config.clickhouseDatabase), pg: app.pg };

  app.get('/v0/accounts/:accountId/metrics', { schema: metricsSchema }, async (request) =>
    accountMetrics(services, request.principal, accountOf(request), queryOf(request)),
  );
  app.get('/v0/accounts/:accountId/metrics/enums/group-by', { schema: groupBySchema }, async (request) => ({
    values: await groupByDimensions(request.principal, accountOf(request), queryOf(request)),
  }));
  app.get('/v0/accounts/:accountId/metrics/enums/resource-types', { schema: resourceTypesSchema }, async (request) => ({
    values: await usedResourceTypes(services, request.principal, accountOf(request), queryOf(request)),
  }));

  // Ingestion reads its body itself: kept as bytes until parsed, so that the thousands of event
  // objects of a request die young (see domain/billing/usage-batch.ts).
  await app.register(async function ingestion(scope) {
    scope.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: INGEST_BODY_LIMIT }, (_request, body, done) => done(null, body));
    scope.post('/v0/accounts/:accountId/usage-events', { bodyLimit: INGEST_BODY_LIMIT, schema: ingestSchema }, async (request, reply) =>
      reply.status(202).send(await ingestUsageEvents(app.pg, request.principal, accountOf(request), request.body as Buffer)),
    );
  });
}
