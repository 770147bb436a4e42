import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { zooKeeperCommand } from './binaries';
import { chooseIdentity, handOver, identityPrefix } from './identity';
import { runLocalService, type LaunchContext, type StartedService } from './local-service';

export interface LocalZooKeeperOptions {
  dataDir: string;
  /** Client port, on 127.0.0.1. */
  port: number;
  /** Folder under dataDir and name of the service. */
  name?: string;
}

/**
 * A standalone ZooKeeper under `<dataDir>/<name>`, for ClickHouse servers run as a cluster (its
 * ON CLUSTER DDL queue and replicated tables need one). No admin server: one port only.
 */
export async function startLocalZooKeeper(options: LocalZooKeeperOptions, ctx: LaunchContext): Promise<{ address: string; service: StartedService }> {
  const name = options.name ?? 'zookeeper';
  const dir = path.join(options.dataDir, name);
  const dataFolder = path.join(dir, 'data');
  fs.mkdirSync(dataFolder, { recursive: true, mode: 0o750 });
  const identity = chooseIdentity('zookeeper', dir, ctx.log);
  const configFile = path.join(dir, 'zoo.cfg');
  const config = [
    'tickTime=2000',
    `dataDir=${dataFolder}`,
    `clientPort=${options.port}`,
    'clientPortAddress=127.0.0.1',
    'admin.enableServer=false',
    'maxClientCnxns=0',
    // The probe's four-letter command.
    '4lw.commands.whitelist=srvr',
  ];
  fs.writeFileSync(configFile, config.join('\n') + '\n', { mode: 0o640 });
  handOver(identity, [dataFolder, configFile]);
  const service = await runLocalService(ctx, {
    spec: {
      name,
      argv: [...zooKeeperCommand(), configFile],
      runAs: identityPrefix(identity),
      logFile: path.join(dir, 'stdout.log'),
      pidFile: path.join(dir, 'service.pid'),
      marker: configFile,
      stopSignal: 'SIGTERM',
      cwd: dir,
    },
    ports: [{ port: options.port, purpose: `ZooKeeper client port of ${name}` }],
    probe: () => servesClients(options.port),
  });
  return { address: `127.0.0.1:${options.port}`, service };
}

/** ZooKeeper answers `srvr` with its mode once it serves clients. */
function servesClients(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = net.connect({ host: '127.0.0.1', port }, () => socket.end('srvr'));
    socket.setTimeout(2_000, () => socket.destroy(new Error('no answer to srvr within 2 s')));
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('error', reject);
    socket.on('close', () => (answer.includes('Mode:') ? resolve() : reject(new Error(`not serving yet: '${answer.trim()}'`))));
  });
}
