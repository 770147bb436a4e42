import type { Pool } from 'pg';
import { principalForApiKey, principalForToken } from '../../store/principals';
import type { TokenService } from '../../api/auth/tokens';
import { ResourceStore } from '../../store/resources';
import type { HttpClient } from '../common/http';
import type { SeededTenant } from './seed';
import { FLOOR_PATH } from './server';

/** One timed operation: an HTTP request to the API, or the floor it is compared with. */
export interface Measurement {
  key: string;
  label: string;
  op: (index: number) => Promise<void>;
}

/** A row of the report: a figure beside its floor. */
export interface Comparison {
  name: string;
  figure: string;
  floor: string;
}

export interface ScenarioContext {
  api: HttpClient;
  /** The bare Fastify app of server.ts. */
  framework: HttpClient;
  /** Straight to PostgreSQL, as many connections as requests in flight. */
  pool: Pool;
  /** The platform's own token service, signing key loaded: issue() is then jose's SignJWT alone. */
  tokens: TokenService;
  tenant: SeededTenant;
  /** From the principal lookup once, as the handler gets it from the principal. */
  workspaceId: string;
  serviceAccountId: string;
  accountId: string;
  accessToken: string;
}

function failUnless<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`${what}: nothing found`);
  return value;
}

/**
 * What is measured. The SQL floors call the same data-access functions the request path calls
 * (principal lookup, then the resource query), straight over pg: the queries themselves, without
 * HTTP, routing, validation, serialization or the role check.
 */
export function measurements(ctx: ScenarioContext): Measurement[] {
  const { tenant } = ctx;
  const store = new ResourceStore(ctx.pool);
  const agent = (i: number) => tenant.agentNames[i % tenant.agentNames.length];
  const withKey = { authorization: `Bearer ${tenant.apiKey}`, 'x-service-workspace': tenant.workspace };
  const withJwt = { authorization: `Bearer ${ctx.accessToken}`, 'x-service-workspace': tenant.workspace };
  const basic = `Basic ${Buffer.from(`${tenant.clientId}:${tenant.clientSecret}`).toString('base64')}`;
  const tokenHeaders = { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' };
  const byKey = () => principalForApiKey(ctx.pool, tenant.apiKey);
  const byId = () => principalForToken(ctx.pool, ctx.serviceAccountId, ctx.accountId);
  // The SQL of one authenticated request: the principal lookup, then the resource query.
  const sql = (principal: () => Promise<unknown>, query: (i: number) => Promise<unknown>) => async (i: number) => {
    failUnless(await principal(), 'principal');
    failUnless(await query(i), 'agent');
  };
  const list = () => store.list(ctx.workspaceId, 'agents');
  const get = (i: number) => store.get({ workspaceId: ctx.workspaceId, kind: 'agents', name: agent(i) });

  return [
    {
      key: 'api.list.key',
      label: 'GET /v0/agents, API key',
      op: async () => void (await ctx.api.expect(200, 'GET', '/v0/agents', withKey)),
    },
    {
      key: 'sql.list.key',
      label: 'SQL: principal by API key + list',
      op: sql(byKey, list),
    },
    {
      key: 'api.get.key',
      label: 'GET /v0/agents/{name}, API key',
      op: async (i) => void (await ctx.api.expect(200, 'GET', `/v0/agents/${agent(i)}`, withKey)),
    },
    {
      key: 'sql.get.key',
      label: 'SQL: principal by API key + get',
      op: sql(byKey, get),
    },
    {
      key: 'api.get.jwt',
      label: 'GET /v0/agents/{name}, JWT',
      op: async (i) => void (await ctx.api.expect(200, 'GET', `/v0/agents/${agent(i)}`, withJwt)),
    },
    {
      key: 'sql.get.jwt',
      label: 'SQL: principal by id + get',
      op: sql(byId, get),
    },
    {
      key: 'api.token',
      label: 'POST /v0/oauth/token',
      op: async () => void (await ctx.api.expect(200, 'POST', '/v0/oauth/token', tokenHeaders, 'grant_type=client_credentials')),
    },
    {
      key: 'jose.sign',
      label: 'jose SignJWT ES256, in-process',
      op: async () => void (await ctx.tokens.issue({ sub: ctx.serviceAccountId, clientId: tenant.clientId, accountId: ctx.accountId })),
    },
    {
      key: 'framework.hello',
      label: `bare Fastify GET ${FLOOR_PATH}`,
      op: async () => void (await ctx.framework.expect(200, 'GET', FLOOR_PATH)),
    },
  ];
}

export const comparisons = (agents: number): Comparison[] => [
  { name: `list ${agents} agents, API key vs SQL`, figure: 'api.list.key', floor: 'sql.list.key' },
  { name: 'get agent, API key vs SQL', figure: 'api.get.key', floor: 'sql.get.key' },
  { name: 'get agent, JWT vs SQL', figure: 'api.get.jwt', floor: 'sql.get.jwt' },
  { name: 'get agent, JWT vs API key', figure: 'api.get.jwt', floor: 'api.get.key' },
  { name: 'token vs jose sign', figure: 'api.token', floor: 'jose.sign' },
  { name: 'get agent vs bare Fastify', figure: 'api.get.key', floor: 'framework.hello' },
];
