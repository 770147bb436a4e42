import { usageTables } from '../../../domain/billing/storage';
import { loadConfig } from '../../../domain/config';
import { clickhouseServerConfig } from '../../../scripts/stack/clickhouse-config';
import { clusterDdl } from '../../../store/clickhouse-cluster-schema';
import { usageTableDefinitions } from '../../../store/clickhouse-tables';

describe('the usage schema on a cluster', () => {
  const tables = usageTables('hangar');
  const distributedOf = (statements: string[]) => statements.filter((sql) => sql.includes('ENGINE = Distributed'));

  test('every statement runs ON CLUSTER, and every usage table the code names is a Distributed table over its local one', () => {
    const statements = clusterDdl('hangar', 'c1', { replicated: false });
    for (const sql of statements) expect(sql).toContain(' ON CLUSTER c1');
    const names = distributedOf(statements).map((sql) => /CREATE TABLE IF NOT EXISTS (\S+) ON CLUSTER/.exec(sql)?.[1]);
    expect(names.sort()).toEqual([tables.raw, tables.hourly, tables.daily, tables.hourlyDims, tables.dailyDims].sort());
    for (const sql of distributedOf(statements)) expect(sql).toMatch(/Distributed\(c1, hangar, usage_\w+_local, cityHash64\(account_id, /);
  });

  test('a re-sent event (same account and id) goes where its first copy went; a rollup row where its identity lives', () => {
    const [raw, hourly] = usageTableDefinitions('hangar');
    expect(raw.shardKey).toBe('cityHash64(account_id, id)');
    // The shard key's columns are part of the deduplication key, so equal rows always share a shard.
    expect(raw.order).toBe('(account_id, toStartOfHour(event_time), id)');
    for (const column of hourly.shardKey.replace(/^cityHash64\(|\)$/g, '').split(', ')) expect(hourly.order).toContain(column);
  });

  test('local tables replicate (with the servers\' macros) only where the cluster has replicas', () => {
    const plain = clusterDdl('hangar', 'c1', { replicated: false }).filter((sql) => sql.includes('_local ON CLUSTER'));
    const replicated = clusterDdl('hangar', 'c1', { replicated: true }).filter((sql) => sql.includes('_local ON CLUSTER'));
    expect(plain).toHaveLength(5);
    for (const sql of plain) expect(sql).not.toContain('Replicated');
    expect(replicated.find((sql) => sql.includes(`${tables.raw}_local`))).toContain(
      "ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/hangar.usage_events_local', '{replica}')",
    );
    expect(replicated.find((sql) => sql.includes(`${tables.daily}_local`))).toContain(
      "ENGINE = ReplicatedSummingMergeTree('/clickhouse/tables/{shard}/hangar.usage_daily_sums_local', '{replica}', (quantity, cost, events))",
    );
  });
});

describe('CLICKHOUSE_CLUSTER', () => {
  test('unset means one server; a plain name is taken as is; anything else is refused naming the variable', () => {
    expect(loadConfig({}).clickhouseCluster).toBeUndefined();
    expect(loadConfig({ CLICKHOUSE_CLUSTER: 'usage_2x2' }).clickhouseCluster).toBe('usage_2x2');
    for (const bad of ['a-b', '1abc', 'x; DROP TABLE y', 'a b']) {
      expect(() => loadConfig({ CLICKHOUSE_CLUSTER: bad })).toThrow(/^CLICKHOUSE_CLUSTER must name a cluster/);
    }
  });
});

describe('a cluster member\'s ClickHouse configuration', () => {
  test('defines the cluster over every shard and replica, with internal replication, ZooKeeper, macros and the DDL queue', () => {
    const xml = clickhouseServerConfig({
      dir: '/data/s1',
      httpPort: 1,
      tcpPort: 2,
      cluster: { name: 'c1', shards: [[2, 3], [4]], password: 'p<&>', zooKeeperPort: 5, interserverHttpPort: 6, shard: '1', replica: 'replica1' },
    });
    expect(xml.match(/<shard>\s*<internal_replication>true<\/internal_replication>/g)).toHaveLength(2);
    expect([...xml.matchAll(/<port>(\d+)<\/port>/g)].map((m) => m[1])).toEqual(['2', '3', '4', '5']);
    expect(xml).toContain('<password>p&lt;&amp;&gt;</password>');
    expect(xml).toContain('<interserver_http_port>6</interserver_http_port>');
    expect(xml).toMatch(/<macros>\s*<shard>1<\/shard>\s*<replica>replica1<\/replica>\s*<\/macros>/);
    expect(xml).toContain('<distributed_ddl>');
  });
});
