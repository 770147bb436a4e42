import { createClient, type ClickHouseClient } from '@clickhouse/client';
import { Pool } from 'pg';
import { flushUsageOutbox } from '../../../activities/usage-flush';
import { buildApp } from '../../../api/app';
import { usageTables, type UsageTables } from '../../../domain/billing/storage';
import { addIdentity, createTenant, testConfig, unique, type TestIdentity, type TestTenant } from '../../helpers/platform';
import type { HangarConfig } from '../../../domain/config';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';

/** Services and an app for billing tests, with a fresh tenant per test file. */
export interface BillingHarness {
  app: FastifyInstance;
  pg: Pool;
  clickhouse: ClickHouseClient;
  tables: UsageTables;
  call(credential: string, options: InjectOptions): Promise<LightMyRequestResponse>;
  /** Moves everything accepted so far into ClickHouse now (what the usage-flush workflow does). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** `overrides` of the test configuration: another PostgreSQL database or ClickHouse (the cluster test's). */
export async function startBillingHarness(overrides: Partial<HangarConfig> = {}): Promise<BillingHarness> {
  const config = testConfig(overrides);
  const app = await buildApp(config);
  await app.ready();
  const tables = usageTables(config.clickhouseDatabase);
  return {
    app,
    pg: app.pg,
    clickhouse: app.clickhouse,
    tables,
    call: (credential, options) =>
      app.inject({ ...options, headers: { authorization: `Bearer ${credential}`, ...options.headers } }),
    flush: async () => {
      // At once: a test asks for the flush when it has put in all it wanted.
      await flushUsageOutbox(app.pg, app.clickhouse, tables, { gatherMs: 0 });
    },
    close: () => app.close(),
  };
}

/** A ClickHouse client of the test stack, outside any app. */
export function stackClickHouse(): ClickHouseClient {
  const config = testConfig();
  return createClient({ url: config.clickhouseUrl, database: config.clickhouseDatabase });
}

export interface BillingTenant extends TestTenant {
  /** A second workspace of the account. */
  otherWorkspace: string;
  /** Workspace admin of `workspace` only, not account admin. */
  workspaceAdmin: TestIdentity;
}

export async function createBillingTenant(pg: Pool): Promise<BillingTenant> {
  const tenant = await createTenant(pg, 'bill');
  const otherWorkspace = unique('bill2');
  await pg.query('INSERT INTO workspaces (id, account_id, name, display_name) VALUES ($1, $2, $3, $3)', [
    `ws-${otherWorkspace}`,
    tenant.accountId,
    otherWorkspace,
  ]);
  const workspaceAdmin = await addIdentity(pg, { accountId: tenant.accountId, workspaceId: tenant.workspaceId, role: 'admin' });
  return { ...tenant, otherWorkspace, workspaceAdmin };
}

export interface EventInput {
  id: string;
  timestamp: string;
  workspace: string;
  resourceType: string;
  resourceName: string;
  resourceUuid?: string;
  billingDimension: string;
  quantity: number;
}

export async function ingest(h: BillingHarness, tenant: TestTenant, events: EventInput[]): Promise<LightMyRequestResponse> {
  return h.call(tenant.admin.apiKey, { method: 'POST', url: `/v0/accounts/${tenant.accountId}/usage-events`, payload: { events } });
}

export function metricsUrl(accountId: string, params: Record<string, string | number | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) query.set(name, String(value));
  return `/v0/accounts/${accountId}/metrics?${query}`;
}
