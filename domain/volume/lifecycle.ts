import type { VolumeStorageKind } from './volume';

/**
 * The volume lifecycle workflow's decisions: which size a volume grows to, and what its events
 * say about its storage. Pure, so that it runs inside the workflow and in unit tests.
 */

export interface VolumeEvent {
  type: 'Normal' | 'Warning';
  message: string;
}

/** The size asked for after a resize: volumes only grow, so a smaller request (late, or repeated) changes nothing. */
export function requestedSize(current: number, asked: number): number {
  return Math.max(current, asked);
}

/** The event of storage just created: a loop image enforces the size, a plain folder (the fallback) does not. */
export function storageReadyEvent(storage: { kind: VolumeStorageKind; reason?: string }, sizeMb: number): VolumeEvent {
  return storage.kind === 'loop'
    ? { type: 'Normal', message: `storage ready: an ext4 image of ${sizeMb} MB` }
    : { type: 'Warning', message: `storage ready as a plain folder, size not enforced: ${storage.reason}` };
}

/** The event of storage grown; `pending` says why the mounted file system could not follow online. */
export function storageGrownEvent(sizeMb: number, pending: string | undefined): VolumeEvent {
  return pending
    ? { type: 'Warning', message: `grown to ${sizeMb} MB; the file system follows when next mounted (online resize refused: ${pending})` }
    : { type: 'Normal', message: `grown to ${sizeMb} MB` };
}
