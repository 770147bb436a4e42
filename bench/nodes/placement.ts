import { performance } from 'node:perf_hooks';
import type { Pool } from 'pg';
import { placementCandidate } from '../../activities/node-placement';
import { nodeTaskQueue } from '../../domain/config';
import { chooseNode } from '../../domain/nodes/placement';
import { formatTable } from '../../domain/text-table';
import { prepare } from '../../scripts/prepare';
import { platformNodes, recordHeartbeat } from '../../store/nodes';
import { createPool } from '../../store/postgres-pool';
import { benchConfig } from '../common/platform';
import { percentile } from '../common/stats';

/**
 * What knowing the nodes costs the platform, on this machine's PostgreSQL (run after a build:
 * `node dist/bench/nodes/placement.js`), with 10, 100 and 1,000 nodes registered:
 *   - a node's heartbeat (its whole report upserted) against a bare one-row UPDATE (the floor);
 *   - a placement decision (the platform's nodes read with their silence, judged and the freest
 *     READY one chosen) against a bare SELECT of the same rows (the floor).
 * Options (environment): BENCH_RUNS (200 timed operations per figure).
 */
const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const QUEUE = `bench-nodes-${process.pid}`;
const GiB = 2 ** 30;

async function timed(runs: number, operation: (i: number) => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 10; i++) await operation(i);
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const began = performance.now();
    await operation(i);
    samples.push(performance.now() - began);
  }
  return percentile(samples, 50);
}

function report(id: string, i: number) {
  return {
    id,
    taskQueue: nodeTaskQueue({ taskQueue: QUEUE, nodeId: id }),
    region: 'bench',
    labels: { zone: `z${i % 3}` },
    capacity: { memoryBytes: 64 * GiB, cpus: 16, diskBytes: 1024 * GiB },
    load: { sandboxes: i % 50, memoryCommittedBytes: (i % 50) * GiB, diskFreeBytes: 512 * GiB },
    startedAt: new Date(),
  };
}

async function measure(pg: Pool, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `n${String(i).padStart(4, '0')}`);
  for (const [i, id] of ids.entries()) await recordHeartbeat(pg, report(id, i));
  const heartbeat = await timed(RUNS, (i) => recordHeartbeat(pg, report(ids[i % count], i)));
  const bareUpdate = await timed(RUNS, (i) => pg.query('UPDATE nodes SET heartbeat_at = now() WHERE id = $1', [ids[i % count]]));
  const place = await timed(RUNS, async () => {
    const rows = await platformNodes(pg, QUEUE);
    return chooseNode(rows.map((row) => placementCandidate(row, 60)));
  });
  const bareSelect = await timed(RUNS, () => pg.query("SELECT * FROM nodes WHERE task_queue LIKE $1 || '-node-%'", [QUEUE]));
  const ms = (value: number) => value.toFixed(2);
  return [String(count), ms(heartbeat), ms(bareUpdate), (heartbeat / bareUpdate).toFixed(2), ms(place), ms(bareSelect), (place / bareSelect).toFixed(2)];
}

async function main(): Promise<void> {
  const config = benchConfig('nodes', 57640);
  const { stack } = await prepare(config, (line) => console.log(`  [stack] ${line}`), { keepRunning: false });
  const pg = createPool(stack.databaseUrl, 2);
  try {
    await pg.query('DELETE FROM nodes WHERE task_queue LIKE $1', [`${QUEUE}%`]);
    const rows: string[][] = [];
    for (const count of [10, 100, 1000]) {
      rows.push(await measure(pg, count));
      await pg.query('DELETE FROM nodes WHERE task_queue LIKE $1', [`${QUEUE}%`]);
    }
    console.log(`\nNodes: p50 ms of ${RUNS} operations each, against a floor measured in the same run\n`);
    console.log(formatTable(['nodes', 'heartbeat', 'bare UPDATE', 'ratio', 'placement', 'bare SELECT', 'ratio'], rows));
  } finally {
    await pg.end();
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
