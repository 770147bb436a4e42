import type { ClickHouseClient } from '@clickhouse/client';
import type { Pool } from 'pg';
import { RESOURCE_TYPES, isBillingDimension, isResourceType, type ResourceType } from '../domain/billing/dimensions';
import type { BilledUsage, FinishedExecution, StateInterval } from '../domain/billing/reconciliation';
import type { UsageTables } from '../domain/billing/storage';
import { sqlLiteral } from '../domain/sql-literal';

/** The window read, epoch milliseconds, optionally one account's resources only. */
export interface SourceWindow {
  since: number;
  until: number;
  accountId?: string;
}

/**
 * What billing:check compares: the state history and finished job executions from PostgreSQL,
 * the bills from ClickHouse (the raw events, deduplicated, summed per resource, dimension and
 * second). Bills still in the outbox are not read: the check leaves the last seconds unjudged.
 */
export async function loadReconciliationInputs(pg: Pool, clickhouse: ClickHouseClient, tables: UsageTables, window: SourceWindow) {
  const [intervals, executions, billed] = await Promise.all([
    loadIntervals(pg, window),
    loadFinishedExecutions(pg, window),
    loadBilledUsage(clickhouse, tables, window),
  ]);
  return { intervals, executions, billed };
}

/**
 * Accepted usage not in ClickHouse yet (the outbox): normally seconds' worth, more while ClickHouse
 * is unreachable. Its resources may show as billed less until the flush catches up.
 */
export async function pendingUsage(pg: Pool, accountId?: string): Promise<{ events: number; oldest?: number }> {
  const { rows } = await pg.query<{ events: string | null; oldest: Date | null }>(
    'SELECT sum(event_count) AS events, min(accepted_at) AS oldest FROM usage_outbox WHERE ($1::text IS NULL OR account_id = $1)',
    [accountId ?? null],
  );
  return { events: Number(rows[0]?.events ?? 0), oldest: rows[0]?.oldest?.getTime() };
}

async function loadIntervals(pg: Pool, window: SourceWindow): Promise<StateInterval[]> {
  const { rows } = await pg.query<{
    workspace: string;
    resource_type: ResourceType;
    resource_name: string;
    resource_uuid: string;
    state: string;
    memory_mb: number;
    stored_bytes: string;
    started_at: Date;
    ended_at: Date | null;
  }>(
    `SELECT workspace, resource_type, resource_name, resource_uuid, state, memory_mb, stored_bytes, started_at, ended_at
       FROM resource_state_intervals
      WHERE started_at < $2 AND COALESCE(ended_at, 'infinity') > $1 AND ($3::text IS NULL OR account_id = $3)
      ORDER BY resource_uuid, started_at`,
    [new Date(window.since), new Date(window.until), window.accountId ?? null],
  );
  return rows.map((row) => ({
    workspace: row.workspace,
    resourceType: row.resource_type,
    resourceName: row.resource_name,
    resourceUuid: row.resource_uuid,
    state: row.state,
    memoryMb: row.memory_mb,
    storedBytes: Number(row.stored_bytes),
    startedAt: row.started_at.getTime(),
    endedAt: row.ended_at?.getTime(),
  }));
}

/** Executions that ended, with the start their bill carries (the execution's creation) in the window. */
async function loadFinishedExecutions(pg: Pool, window: SourceWindow): Promise<FinishedExecution[]> {
  const { rows } = await pg.query<{ id: string; workspace: string; job_name: string; memory_mb: string; created_at: Date; completed_at: Date; task_seconds: number }>(
    `SELECT e.id, w.name AS workspace, e.job_name, e.settings->>'memoryMb' AS memory_mb, e.created_at, e.completed_at,
            COALESCE((SELECT sum(t.seconds) FROM job_tasks t WHERE t.execution_id = e.id), 0) AS task_seconds
       FROM job_executions e JOIN workspaces w ON w.id = e.workspace_id
      WHERE e.completed_at IS NOT NULL AND e.created_at >= $1 AND e.created_at < $2 AND ($3::text IS NULL OR w.account_id = $3)`,
    [new Date(window.since), new Date(window.until), window.accountId ?? null],
  );
  return rows.map((row) => ({
    workspace: row.workspace,
    resourceType: 'job',
    resourceName: row.job_name,
    resourceUuid: row.id,
    startedAt: row.created_at.getTime(),
    completedAt: row.completed_at.getTime(),
    memoryMb: Number(row.memory_mb),
    taskSeconds: Number(row.task_seconds),
  }));
}

async function loadBilledUsage(clickhouse: ClickHouseClient, tables: UsageTables, window: SourceWindow): Promise<BilledUsage[]> {
  const where = [
    `event_time >= toDateTime(${Math.floor(window.since / 1000)}, 'UTC')`,
    `event_time < toDateTime(${Math.ceil(window.until / 1000)}, 'UTC')`,
    `resource_type IN (${RESOURCE_TYPES.map((type) => sqlLiteral(type)).join(', ')})`,
    ...(window.accountId ? [`account_id = ${sqlLiteral(window.accountId)}`] : []),
  ];
  // FINAL: an event re-sent by a retried flush is one bill.
  const query = `SELECT workspace, resource_type, resource_name, resource_uuid, billing_dimension, toUInt32(event_time) AS at, toString(sum(quantity)) AS quantity
    FROM ${tables.raw} FINAL WHERE ${where.join(' AND ')}
    GROUP BY workspace, resource_type, resource_name, resource_uuid, billing_dimension, event_time`;
  const result = await clickhouse.query({ query, format: 'JSONEachRow' });
  const rows = await result.json<{ workspace: string; resource_type: string; resource_name: string; resource_uuid: string; billing_dimension: string; at: number | string; quantity: string }>();
  return rows.flatMap((row) =>
    isResourceType(row.resource_type) && isBillingDimension(row.billing_dimension)
      ? [{
          workspace: row.workspace,
          resourceType: row.resource_type,
          resourceName: row.resource_name,
          // Meters name a resource by its uuid; an external meter may name it by name alone.
          resourceUuid: row.resource_uuid || `${row.workspace}/${row.resource_type}/${row.resource_name}`,
          billingDimension: row.billing_dimension,
          at: Number(row.at) * 1000,
          quantity: Number(row.quantity),
        }]
      : [],
  );
}
