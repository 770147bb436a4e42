import fsp from 'node:fs/promises';
import os from 'node:os';
import type { Pool } from 'pg';
import { nodeTaskQueue, type HangarConfig } from '../domain/config';
import { HEARTBEAT_INTERVAL_MS, type NodeLoad, type NodeReport } from '../domain/nodes/node';
import { recordHeartbeat } from '../store/nodes';
import type { SandboxStatus } from './sandbox-runtime';

const MiB = 1024 * 1024;

export interface NodeHeartbeatOptions {
  pg: Pool;
  id: string;
  taskQueue: string;
  region: string;
  labels: Record<string, string>;
  /** The data folder: its file system's size and free space are the node's disk. */
  dataDir: string;
  /** The node's sandboxes (warm ones excluded), as the runtime lists them. */
  sandboxes: () => Promise<SandboxStatus[]>;
  intervalMs?: number;
  /** Where other hosts' gateways reach the node's listener (HANGAR_NODE_LISTEN); none without. */
  listenerUrl?: string;
  /** Where an outage of the reports and their return are told (the worker's log). */
  log?: (line: string) => void;
}

/**
 * A node worker's reports of itself to the platform: its capacity and load, written to
 * PostgreSQL at start and then every HEARTBEAT_INTERVAL_MS. A failed write (the database
 * restarting) is reported once per outage and retried on the next beat; the node's silence is
 * what the platform judges, so nothing is queued.
 */
export class NodeHeartbeat {
  private timer: NodeJS.Timeout | undefined;
  private beating: Promise<void> | undefined;
  private failing = false;
  private stopped = false;
  private readonly startedAt = new Date();

  constructor(private readonly options: NodeHeartbeatOptions) {}

  /** The heartbeat of the node `config` describes (its id, task queue, region, labels and data folder). */
  static forNode(config: HangarConfig, pg: Pool, sandboxes: NodeHeartbeatOptions['sandboxes'], log?: NodeHeartbeatOptions['log']): NodeHeartbeat {
    const { nodeId: id, region, nodeLabels: labels, dataDir, nodeListenerUrl: listenerUrl } = config;
    return new NodeHeartbeat({ pg, id, taskQueue: nodeTaskQueue(config), region, labels, dataDir, sandboxes, log, listenerUrl });
  }

  /** Registers the node (the first report is awaited: a failure here stops the worker's start) and keeps reporting. */
  async start(): Promise<void> {
    await recordHeartbeat(this.options.pg, await this.report());
    this.schedule();
  }

  /** Stops reporting; the platform sees the node go silent. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.beating;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.beating = this.beat().finally(() => this.schedule());
    }, this.options.intervalMs ?? HEARTBEAT_INTERVAL_MS);
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    try {
      await recordHeartbeat(this.options.pg, await this.report());
      if (this.failing) this.options.log?.('node heartbeat: reporting again');
      this.failing = false;
    } catch (err) {
      if (!this.failing) this.options.log?.(`node heartbeat: could not report (${(err as Error).message}); retrying every beat`);
      this.failing = true;
    }
  }

  private async report(): Promise<NodeReport> {
    const { id, taskQueue, region, labels, dataDir, listenerUrl } = this.options;
    const disk = await fsp.statfs(dataDir);
    const load: NodeLoad = { ...sandboxLoad(await this.options.sandboxes()), diskFreeBytes: disk.bavail * disk.bsize };
    return {
      id,
      taskQueue,
      region,
      labels,
      capacity: { memoryBytes: os.totalmem(), cpus: os.availableParallelism(), diskBytes: disk.blocks * disk.bsize },
      load,
      startedAt: this.startedAt,
      listenerUrl,
    };
  }
}

/** The sandboxes a node carries (stopped ones hold no memory) and the memory their limits commit. */
export function sandboxLoad(sandboxes: readonly Pick<SandboxStatus, 'state' | 'memoryMb'>[]): Omit<NodeLoad, 'diskFreeBytes'> {
  const live = sandboxes.filter((sandbox) => sandbox.state !== 'stopped');
  return { sandboxes: live.length, memoryCommittedBytes: live.reduce((sum, sandbox) => sum + sandbox.memoryMb * MiB, 0) };
}
