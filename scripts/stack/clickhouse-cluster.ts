import { freePort } from './free-port';
import { startLocalClickHouse } from './clickhouse';
import type { LaunchContext, StartedService } from './local-service';
import { startLocalZooKeeper } from './zookeeper';

export interface ClusterServer {
  /** http://user:password@127.0.0.1:port/ */
  url: string;
  shard: number;
  replica: number;
}

export interface LocalClickHouseCluster {
  name: string;
  servers: ClusterServer[];
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** Folder holding the ZooKeeper and every server's data. */
  dataDir: string;
  name: string;
  shards: number;
  replicas: number;
  password: string;
  database: string;
}

/**
 * A ZooKeeper and shards x replicas ClickHouse servers on free loopback ports, each defining
 * the cluster `name` over all of them, started by the stack's own launchers: what the cluster
 * test and benchmark run against (a production cluster is the operator's own). Everything
 * started is stopped again if any part fails; all of it dies with this process.
 */
export async function startClickHouseCluster(options: ClusterOptions): Promise<LocalClickHouseCluster> {
  const ctx: LaunchContext = { log: () => undefined, bindToParent: true, reuseRunning: false, readyTimeoutMs: 90_000 };
  const started: StartedService[] = [];
  const stop = async () => {
    // Servers first: they hold sessions on the ZooKeeper.
    await Promise.allSettled(started.slice(1).map((service) => service.stop()));
    await started[0]?.stop();
  };
  try {
    const zooKeeper = await startLocalZooKeeper({ dataDir: options.dataDir, port: await freePort() }, ctx);
    started.push(zooKeeper.service);
    const zooKeeperPort = Number(zooKeeper.address.split(':')[1]);
    const layout: { shard: number; replica: number; httpPort: number; tcpPort: number; interserverHttpPort: number }[] = [];
    for (let shard = 1; shard <= options.shards; shard++) {
      for (let replica = 1; replica <= options.replicas; replica++) {
        layout.push({ shard, replica, httpPort: await freePort(), tcpPort: await freePort(), interserverHttpPort: await freePort() });
      }
    }
    const shards = Array.from({ length: options.shards }, (_, i) => layout.filter((server) => server.shard === i + 1).map((server) => server.tcpPort));
    const launches = await Promise.allSettled(
      layout.map(async (server) => {
        const result = await startLocalClickHouse(
          {
            dataDir: options.dataDir,
            name: `clickhouse-s${server.shard}r${server.replica}`,
            httpPort: server.httpPort,
            tcpPort: server.tcpPort,
            password: options.password,
            database: options.database,
            cluster: {
              name: options.name,
              shards,
              password: options.password,
              zooKeeperPort,
              interserverHttpPort: server.interserverHttpPort,
              shard: String(server.shard),
              replica: `replica${server.replica}`,
            },
          },
          ctx,
        );
        started.push(result.service);
        return { url: result.url, shard: server.shard, replica: server.replica };
      }),
    );
    const failed = launches.find((launch): launch is PromiseRejectedResult => launch.status === 'rejected');
    if (failed) throw failed.reason;
    const servers = launches.map((launch) => (launch as PromiseFulfilledResult<ClusterServer>).value);
    return { name: options.name, servers, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
