import type { ClickHouseClient } from '@clickhouse/client';
import { retiredRollups } from '../domain/billing/storage';
import { sqlLiteral } from '../domain/sql-literal';
import { createTableSql, usageTableDefinitions } from './clickhouse-tables';

/**
 * The usage schema on a ClickHouse cluster (CLICKHOUSE_CLUSTER, defined in the servers' own
 * remote_servers). Every statement runs ON CLUSTER, so each server gets the same tables:
 *
 * - `<table>_local`: the rows of its shard, in the engine the single server uses, replicated
 *   (Replicated*MergeTree, over ZooKeeper) when some shard of the cluster has more than one replica;
 * - `<table>`: a Distributed table over the shards' `<table>_local`, under the name the readers
 *   and writers use on one server, so no query changes. Its sharding key keeps together the rows
 *   the engine collapses (a re-sent event and its first copy; a rollup identity's rows), so
 *   FINAL and the sums' merges see them on one shard, as on one server.
 */

/** What the migration needs to know of the cluster, and of what the database already holds. */
export interface ClusterShape {
  /** Some shard has more than one replica: the local tables must replicate. */
  replicated: boolean;
}

const LOCAL_SUFFIX = '_local';

/**
 * Reads the cluster's definition from the server, refusing a name it does not define and a
 * database whose usage tables were made for a single server (they would stay in place, unsharded).
 */
export async function clusterShape(client: ClickHouseClient, database: string, cluster: string): Promise<ClusterShape> {
  const hosts = await rows<{ shard_num: number; replica_num: number }>(
    client,
    `SELECT shard_num, replica_num FROM system.clusters WHERE cluster = ${sqlLiteral(cluster)}`,
  );
  if (hosts.length === 0) {
    const known = (await rows<{ cluster: string }>(client, 'SELECT DISTINCT cluster FROM system.clusters ORDER BY cluster')).map((row) => row.cluster);
    throw new Error(
      `CLICKHOUSE_CLUSTER is '${cluster}', a cluster the ClickHouse server does not define (its remote_servers: ${known.join(', ') || 'none'})`,
    );
  }
  const names = usageTableDefinitions(database).map((table) => table.name.slice(database.length + 1));
  const single = await rows<{ name: string; engine: string }>(
    client,
    `SELECT name, engine FROM system.tables WHERE database = ${sqlLiteral(database)} AND name IN (${names.map(sqlLiteral).join(', ')}) AND engine != 'Distributed'`,
  );
  if (single.length > 0) {
    throw new Error(
      `CLICKHOUSE_CLUSTER is '${cluster}', but ${database}.${single[0].name} is a single-server table (${single[0].engine}): ` +
        'move its rows to the cluster (or use another CLICKHOUSE_DATABASE) before sharding',
    );
  }
  return { replicated: hosts.some((host) => Number(host.replica_num) > 1) };
}

/** The statements creating the schema on `cluster`, in order. */
export function clusterDdl(database: string, cluster: string, shape: ClusterShape): string[] {
  const on = ` ON CLUSTER ${cluster}`;
  const statements = [`CREATE DATABASE IF NOT EXISTS ${database}${on}`];
  for (const table of usageTableDefinitions(database)) {
    const local = `${table.name}${LOCAL_SUFFIX}`;
    const engine = shape.replicated
      ? // {shard} and {replica} are macros of each server's configuration.
        `Replicated${table.engine}('/clickhouse/tables/{shard}/${local}', '{replica}'${table.engineArgs ? `, ${table.engineArgs}` : ''})`
      : `${table.engine}(${table.engineArgs})`;
    statements.push(createTableSql(local, table, engine, on));
    const [, localName] = local.split('.');
    statements.push(
      `CREATE TABLE IF NOT EXISTS ${table.name}${on} (${table.columns}
    ) ENGINE = Distributed(${cluster}, ${database}, ${localName}, ${table.shardKey})`,
    );
  }
  for (const retired of retiredRollups(database)) statements.push(`DROP TABLE IF EXISTS ${retired}${on}`);
  return statements;
}

async function rows<T>(client: ClickHouseClient, query: string): Promise<T[]> {
  const result = await client.query({ query, format: 'JSONEachRow' });
  return result.json<T>();
}
