/**
 * A runtime node as the platform knows it: what it has, what it carries, and whether it is
 * still heard from.
 */

/** Heard from within UNREACHABLE_AFTER_SECONDS: READY; silent longer: UNREACHABLE, then LOST. */
export type NodeState = 'READY' | 'UNREACHABLE' | 'LOST';

/** A node silent this long may be gone or cut off: nothing new is placed on it. */
export const UNREACHABLE_AFTER_SECONDS = 10;
/** How often a node worker reports; well inside UNREACHABLE_AFTER_SECONDS, so one late write is not an outage. */
export const HEARTBEAT_INTERVAL_MS = 2_000;

export interface NodeCapacity {
  memoryBytes: number;
  cpus: number;
  diskBytes: number;
}

export interface NodeLoad {
  sandboxes: number;
  /** The memory limits of the node's sandboxes, summed: what placement counts as taken. */
  memoryCommittedBytes: number;
  diskFreeBytes: number;
}

/** What a node worker reports of itself each time. */
export interface NodeReport {
  id: string;
  taskQueue: string;
  region: string;
  labels: Record<string, string>;
  capacity: NodeCapacity;
  load: NodeLoad;
  startedAt: Date;
  /** Where other hosts' gateways reach its sandboxes and workloads (its listener); undefined when it has none. */
  listenerUrl?: string;
}

/** The state of a node silent for `silentSeconds` (by the database's clock), LOST after `lostAfterSeconds`. */
export function nodeState(silentSeconds: number, lostAfterSeconds: number): NodeState {
  if (silentSeconds <= UNREACHABLE_AFTER_SECONDS) return 'READY';
  return silentSeconds <= lostAfterSeconds ? 'UNREACHABLE' : 'LOST';
}

/** Memory a node has left for new work: its total less what its sandboxes may take (never below 0). */
export function freeMemoryBytes(capacity: NodeCapacity, load: NodeLoad): number {
  return Math.max(0, capacity.memoryBytes - load.memoryCommittedBytes);
}

const LABEL_KEY = /^[a-z0-9]([a-z0-9._/-]{0,61}[a-z0-9])?$/;
const LABEL_VALUE = /^[A-Za-z0-9._-]{0,63}$/;

/**
 * Node labels written `key=value,key=value` (HANGAR_NODE_LABELS): lower-case keys, short plain
 * values; a mistake is an error naming the entry, never a label quietly dropped.
 */
export function parseNodeLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const entry of text.split(',').map((part) => part.trim()).filter(Boolean)) {
    const at = entry.indexOf('=');
    const [key, value] = at < 0 ? [entry, ''] : [entry.slice(0, at), entry.slice(at + 1)];
    if (at < 0 || !LABEL_KEY.test(key) || !LABEL_VALUE.test(value)) {
      throw new Error(`'${entry}' is not a label: write key=value, the key lower-case letters, digits and . _ / - (at most 63), the value letters, digits and . _ - (at most 63)`);
    }
    if (key in labels) throw new Error(`label '${key}' is given twice`);
    labels[key] = value;
  }
  return labels;
}
