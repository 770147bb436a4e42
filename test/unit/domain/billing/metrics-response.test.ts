import { assembleMetrics, type Row } from '../../../../domain/billing/metrics-response';
import { bucketSql, groupListSql, resourceTypesSql, totalsSql } from '../../../../domain/billing/metrics-sql';
import { parseMetricsQuery } from '../../../../domain/billing/metrics-query';
import { usageTables } from '../../../../domain/billing/storage';

const hour = (h: number) => Date.parse('2026-04-16T00:00:00Z') / 1000 + h * 3600;
const window = { startTime: '2026-04-16T00:00:00Z', endTime: '2026-04-16T04:00:00Z' };
const noCursor = () => {
  throw new Error('no cursor expected');
};

describe('assembleMetrics', () => {
  it('zero-fills every bucket of an ungrouped window, even with no data', () => {
    const body = assembleMetrics(parseMetricsQuery(window), { buckets: [] }, noCursor);
    expect(body).toEqual({
      startTime: '2026-04-16T00:00:00Z',
      endTime: '2026-04-16T04:00:00Z',
      resolution: 'hourly',
      summary: { totalCost: 0 },
      data: [
        {
          summary: { cost: 0 },
          timeseries: [0, 1, 2, 3].map((h) => ({ timestamp: `2026-04-16T0${h}:00:00Z`, cost: 0 })),
        },
      ],
      meta: { hasMore: false, nextCursor: '' },
    });
  });

  it('builds entries from groups and their buckets, with exact sums, usage by unit and enrichment', () => {
    const query = parseMetricsQuery({ ...window, groupBy: 'billing_dimension,resource_name' });
    const groups: Row[] = [
      { resource_name: 'a', billing_dimension: 'agent_async_requests_count', cost_sum: '0.300000003', quantity_sum: '3000.000000000', min_workspace: 'w1', max_workspace: 'w2', min_resource_type: 'agent', max_resource_type: 'agent' },
      { resource_name: 'b', billing_dimension: 'volume_storage_gbs', cost_sum: '0.000000001', quantity_sum: '0.500000000', min_workspace: 'w2', max_workspace: 'w2', min_resource_type: 'volume', max_resource_type: 'volume' },
    ];
    const buckets: Row[] = [
      { resource_name: 'a', billing_dimension: 'agent_async_requests_count', bucket: hour(1), cost_sum: '0.100000001', quantity_sum: '1000.000000000' },
      { resource_name: 'a', billing_dimension: 'agent_async_requests_count', bucket: String(hour(3)), cost_sum: '0.200000002', quantity_sum: '2000.000000000' },
      { resource_name: 'b', billing_dimension: 'volume_storage_gbs', bucket: hour(0), cost_sum: '0.000000001', quantity_sum: '0.500000000' },
    ];
    const totals: Row[] = [
      { billing_dimension: 'agent_async_requests_count', cost_sum: '0.300000003', quantity_sum: '3000.000000000' },
      { billing_dimension: 'volume_storage_gbs', cost_sum: '0.000000001', quantity_sum: '0.500000000' },
    ];
    const body = assembleMetrics(query, { groups, buckets, totals }, noCursor);
    expect(body.summary).toEqual({ totalCost: 0.300000004, totalUsage: { count: 3000, gbs: 0.5 } });
    expect(body.data[0]).toEqual({
      // Two workspaces in the group: no workspace field.
      resourceType: 'agent',
      resourceName: 'a',
      billingDimension: 'agent_async_requests_count',
      summary: { cost: 0.300000003, usage: { count: 3000 } },
      timeseries: [
        { timestamp: '2026-04-16T00:00:00Z', cost: 0, usage: { count: 0 } },
        { timestamp: '2026-04-16T01:00:00Z', cost: 0.100000001, usage: { count: 1000 } },
        { timestamp: '2026-04-16T02:00:00Z', cost: 0, usage: { count: 0 } },
        { timestamp: '2026-04-16T03:00:00Z', cost: 0.200000002, usage: { count: 2000 } },
      ],
    });
    expect(body.data[1]).toMatchObject({ workspace: 'w2', resourceType: 'volume', resourceName: 'b', summary: { cost: 0.000000001, usage: { gbs: 0.5 } } });
  });

  it('sums the buckets of an ungrouped query', () => {
    const buckets: Row[] = [
      { bucket: hour(0), cost_sum: '0.100000000' },
      { bucket: hour(2), cost_sum: '0.200000000' },
    ];
    const body = assembleMetrics(parseMetricsQuery(window), { buckets }, noCursor);
    expect(body.summary).toEqual({ totalCost: 0.3 });
    expect(body.data[0].summary).toEqual({ cost: 0.3 });
    expect(body.data[0].timeseries.map((p) => p.cost)).toEqual([0.1, 0, 0.2, 0]);
  });

  it('serves limit groups and a cursor after the last one when one more came back', () => {
    const query = parseMetricsQuery({ ...window, groupBy: 'resource_uuid', limit: '2' });
    const row = (uuid: string): Row => ({
      resource_uuid: uuid,
      cost_sum: '1.000000000',
      min_workspace: 'w',
      max_workspace: 'w',
      min_resource_type: 'job',
      max_resource_type: 'job',
      min_resource_name: uuid,
      max_resource_name: uuid,
    });
    const totals: Row[] = [{ billing_dimension: 'job_compute_runtime_gbs', cost_sum: '3.000000000', quantity_sum: '1' }];
    const body = assembleMetrics(query, { groups: [row('u1'), row('u2'), row('u3')], buckets: [], totals }, (key) => `after:${key.join('/')}`);
    expect(body.data.map((e) => e.resourceUuid)).toEqual(['u1', 'u2']);
    expect(body.data[0]).toMatchObject({ workspace: 'w', resourceType: 'job', resourceName: 'u1' });
    expect(body.meta).toEqual({ hasMore: true, nextCursor: 'after:u2' });
    expect(body.summary).toEqual({ totalCost: 3 });
    const last = assembleMetrics(query, { groups: [row('u3')], buckets: [], totals }, noCursor);
    expect(last.meta).toEqual({ hasMore: false, nextCursor: '' });
  });
});

describe('metrics SQL', () => {
  const scope = { tables: usageTables('hangar'), accountId: "acc'1" };

  it('escapes every value and names only allowlisted columns and tables', () => {
    const query = parseMetricsQuery({ ...window, groupBy: 'resource_name', resourceName: "x' OR '1'='1", workspace: 'a\\b' });
    const sql = groupListSql({ ...scope, visibleWorkspaces: ["w'1"] }, query, ["it's"]) + bucketSql(scope, query, ["it's"], ['zz']);
    expect(sql).toContain("resource_name = 'x\\' OR \\'1\\'=\\'1'");
    expect(sql).toContain("workspace = 'a\\\\b'");
    expect(sql).toContain("account_id = 'acc\\'1'");
    expect(sql).toContain("workspace IN ('w\\'1')");
    expect(sql).toContain("resource_name > 'it\\'s'");
    expect(sql).toContain("resource_name <= 'zz'");
    expect(sql).toMatch(/FROM hangar\.usage_hourly_sums WHERE/);
    // Rollup rows are summed: no FINAL, no version.
    expect(sql).not.toContain('_sums FINAL');
    expect(sql).not.toContain('version');
  });

  it('reads whole days from the daily table unless buckets are hourly, and edges from raw', () => {
    const daily = parseMetricsQuery({ startTime: '2026-04-01T10:30:00Z', endTime: '2026-04-05T00:00:00Z', resolution: 'daily', groupBy: 'resource_name' });
    const sql = bucketSql(scope, daily, undefined, undefined);
    expect(sql).toContain('hangar.usage_daily_sums ');
    expect(sql).toContain('hangar.usage_hourly_sums ');
    expect(sql).toContain('hangar.usage_events FINAL');
    expect(totalsSql(scope, daily)).toContain('GROUP BY billing_dimension');
    expect(resourceTypesSql(scope, daily)).toContain('SELECT DISTINCT resource_type');
    // Non-admins with no workspace see nothing.
    expect(groupListSql({ ...scope, visibleWorkspaces: [] }, daily, undefined)).toContain('0 = 1');
    // Without names or uuids, the smaller rollups serve.
    const byType = parseMetricsQuery({ ...window, groupBy: 'resource_type,billing_dimension' });
    expect(bucketSql(scope, byType, undefined, undefined)).toContain('hangar.usage_hourly_dims_sums');
    expect(bucketSql(scope, parseMetricsQuery({ ...window, groupBy: 'resource_type', resourceName: 'x' }), undefined, undefined)).not.toContain('_dims');
  });
});
