import { usageTables } from '../domain/billing/storage';

/** One usage table: what it holds and how it is stored, wherever it lives. */
export interface UsageTableDefinition {
  /** database.table, the name every reader and writer uses. */
  name: string;
  columns: string;
  engine: 'ReplacingMergeTree' | 'SummingMergeTree';
  /** The engine's own arguments (the summed columns), without parentheses. */
  engineArgs: string;
  partition: string;
  order: string;
  settings?: string;
  /**
   * Which shard a row goes to on a cluster. Rows the engine collapses into one (a re-sent event;
   * a rollup row of the same identity) share the key's columns, so they meet on one shard.
   */
  shardKey: string;
}

const MEASURES = `
      quantity           Decimal(38, 9),
      cost               Decimal(38, 9),
      events             Int64`;
const DIMS = `
      workspace          String,
      resource_type      String,
      resource_name      String,
      resource_uuid      String,
      billing_dimension  String,`;
const FEW_DIMS = `
      workspace          String,
      resource_type      String,
      billing_dimension  String,`;

export function usageTableDefinitions(database: string): UsageTableDefinition[] {
  const tables = usageTables(database);
  const rollup = (name: string, time: string, columns: string, sortKey: string, partition: string, granularity: number, identity: string): UsageTableDefinition => ({
    name,
    columns: `
      account_id  String,
      ${time}     DateTime('UTC'),${columns}${MEASURES}`,
    engine: 'SummingMergeTree',
    engineArgs: '(quantity, cost, events)',
    partition,
    order: `(account_id, ${sortKey})`,
    settings: `index_granularity = ${granularity}`,
    shardKey: `cityHash64(account_id, ${identity})`,
  });
  // Per resource: workspace first, so that a workspace's rows of a window lie together (every
  // query of a non-admin is limited to theirs), then name, so that small granules let the primary
  // key skip the other pages' names.
  const fullKey = (time: string) => `workspace, ${time}, resource_name, resource_uuid, resource_type, billing_dimension`;
  const fewKey = (time: string) => `${time}, workspace, resource_type, billing_dimension`;
  const fullIdentity = 'workspace, resource_type, resource_name, resource_uuid, billing_dimension';
  const fewIdentity = 'workspace, resource_type, billing_dimension';
  return [
    {
      name: tables.raw,
      columns: `
      account_id         String,
      id                 String,
      event_time         DateTime('UTC'),${DIMS}
      quantity           Decimal(38, 9),
      cost               Decimal(38, 9)`,
      engine: 'ReplacingMergeTree',
      engineArgs: '',
      partition: 'toYYYYMM(event_time)',
      order: '(account_id, toStartOfHour(event_time), id)',
      // A re-sent event has the account and id of its first copy (and so its hour).
      shardKey: 'cityHash64(account_id, id)',
    },
    rollup(tables.hourly, 'hour', DIMS, fullKey('hour'), 'toYYYYMM(hour)', 256, fullIdentity),
    rollup(tables.daily, 'day', DIMS, fullKey('day'), 'toYear(day)', 256, fullIdentity),
    rollup(tables.hourlyDims, 'hour', FEW_DIMS, fewKey('hour'), 'toYYYYMM(hour)', 8192, fewIdentity),
    rollup(tables.dailyDims, 'day', FEW_DIMS, fewKey('day'), 'toYear(day)', 8192, fewIdentity),
  ];
}

/** CREATE TABLE IF NOT EXISTS `name` [`onCluster`] of a definition's columns, with `engine` (a MergeTree one). */
export function createTableSql(name: string, table: UsageTableDefinition, engine: string, onCluster = ''): string {
  return `CREATE TABLE IF NOT EXISTS ${name}${onCluster} (${table.columns}
    ) ENGINE = ${engine}
    PARTITION BY ${table.partition}
    ORDER BY ${table.order}${table.settings ? `
    SETTINGS ${table.settings}` : ''}`;
}
