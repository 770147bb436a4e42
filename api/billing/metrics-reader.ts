import type { ClickHouseClient } from '@clickhouse/client';
import type { FastifyBaseLogger } from 'fastify';
import type { Pool } from 'pg';
import { pendingHours } from '../../store/usage-pending';
import { decodeCursor, encodeCursor } from '../../domain/billing/cursor';
import { InvalidInput } from '../../domain/billing/errors';
import type { MetricsQuery, MetricsWindow } from '../../domain/billing/metrics-query';
import { assembleMetrics, groupKey, type MetricsResponse, type Row } from '../../domain/billing/metrics-response';
import { bucketSql, groupListSql, resourceTypesSql, totalsSql, type MetricsScope } from '../../domain/billing/metrics-sql';
import { ApiError } from '../../domain/errors';

/** Runs the metrics reads on ClickHouse: the page's groups, their buckets and the window totals. */
export class MetricsReader {
  constructor(
    private readonly clickhouse: ClickHouseClient,
    private readonly pg: Pool,
    private readonly log: FastifyBaseLogger,
  ) {}

  async metrics(caller: MetricsScope, query: MetricsQuery, fingerprint: string): Promise<MetricsResponse> {
    const scope = await this.withPendingHours(caller);
    let after: string[] | undefined;
    if (query.cursor !== undefined) {
      // An ungrouped answer is never paged: no cursor was ever issued for it.
      if (query.groupBy.length === 0) throw new InvalidInput('cursor', 'cursor is invalid or was issued for a different query');
      after = decodeCursor(query.cursor, fingerprint, query.groupBy.length);
    }
    if (query.groupBy.length === 0) {
      const buckets = await this.rows(bucketSql(scope, query, undefined, undefined));
      return assembleMetrics(query, { buckets }, () => '');
    }
    // The page's groups first (cheap: no buckets, coarse tables), then the buckets of exactly
    // that key range; the window totals alongside.
    const page = async () => {
      const groups = await this.rows(groupListSql(scope, query, after));
      const served = groups.slice(0, query.limit);
      const lastKey = served.length > 0 ? groupKey(query, served[served.length - 1]) : undefined;
      const buckets = lastKey ? await this.rows(bucketSql(scope, query, after, lastKey)) : [];
      return { groups, buckets };
    };
    const [totals, { groups, buckets }] = await Promise.all([this.rows(totalsSql(scope, query)), page()]);
    return assembleMetrics(query, { groups, buckets, totals }, (key) => encodeCursor(fingerprint, key));
  }

  async resourceTypes(caller: MetricsScope, window: MetricsWindow): Promise<string[]> {
    const rows = await this.rows(resourceTypesSql(await this.withPendingHours(caller), window));
    return rows.map((row) => String(row.resource_type));
  }

  /** The scope with the account's hours that have to be read raw (usually none, or those of the batch being flushed). */
  private async withPendingHours(scope: MetricsScope): Promise<MetricsScope> {
    return { ...scope, pendingHours: await pendingHours(this.pg, scope.accountId) };
  }

  private async rows(query: string): Promise<Row[]> {
    try {
      // One JSON document, parsed at once: cheaper than a parse per row (JSONEachRow) for pages of thousands of buckets.
      const result = await this.clickhouse.query({ query, format: 'JSON' });
      return (await result.json<Row>()).data;
    } catch (err) {
      // The usage store being down is not the caller's fault, nor a bug: say so, and retryable.
      this.log.error({ err }, 'usage metrics query failed');
      throw new ApiError(503, 'unavailable', 'usage metrics are temporarily unavailable; retry later');
    }
  }
}
