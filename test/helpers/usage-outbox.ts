import type { Pool } from 'pg';
import { RAW_COLUMNS } from '../../domain/billing/usage-batch';

/** One usage event waiting in the outbox, as its ClickHouse row will say it. */
export interface OutboxEvent {
  account_id: string;
  id: string;
  /** Epoch seconds. */
  event_time: number;
  workspace: string;
  resource_type: string;
  resource_name: string;
  resource_uuid: string;
  billing_dimension: string;
  quantity: number;
  /** USD, as the exact decimal text stored. */
  cost: string;
}

const COLUMNS = RAW_COLUMNS.split(', ');

/**
 * The events of an account still waiting in the outbox (before the flush moves them), from
 * TabSeparated rows; only `resourceUuid`'s when given.
 */
export async function outboxEvents(pg: Pool, accountId: string, resourceUuid?: string): Promise<OutboxEvent[]> {
  const { rows } = await pg.query<{ tsv: string }>('SELECT tsv FROM usage_outbox WHERE account_id = $1 AND tsv IS NOT NULL ORDER BY seq', [accountId]);
  const events = rows.flatMap((row) =>
    row.tsv
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const fields = line.split('\t').map((field) => field.replaceAll('\\\\', '\\'));
        const event = Object.fromEntries(COLUMNS.map((column, i) => [column, fields[i]]));
        return { ...event, event_time: Number(event.event_time), quantity: Number(event.quantity) } as OutboxEvent;
      }),
  );
  return resourceUuid === undefined ? events : events.filter((event) => event.resource_uuid === resourceUuid);
}
