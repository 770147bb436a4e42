import { lstatSync, watch, type FSWatcher, type Stats } from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { FileEvent, FileEventOp } from './contract/search';
import { joinPath, within } from './fs-paths';

/**
 * Changes in a folder (and, recursive, in every folder below it) as FileEvents, from inotify
 * through Node's fs.watch: one non-recursive watch per folder, added as folders appear. (Node
 * 20's own recursive mode on Linux polls every file with stat; this never polls.)
 *
 * inotify says more than fs.watch passes on ('rename' or 'change'), so the op is read back from
 * the file itself, against what was known of it:
 *  - 'rename' and the entry exists: CREATE; it is gone: REMOVE, or RENAME when an entry with its
 *    inode appears in the same batch of events (a move reads as RENAME old, CREATE new);
 *  - 'change': CHMOD when its mode or owner changed, WRITE otherwise.
 * A batch is what arrives before the event loop turns (inotify hands them over together).
 */

export interface WatchOptions {
  /** The folder's real path, and the path callers know it by. */
  real: string;
  shown: string;
  recursive: boolean;
  /** Events whose path contains one of these texts are not sent (and folders whose path does are not watched). */
  ignore: readonly string[];
  /** Real folders the API never shows. */
  hiddenRoots: readonly string[];
  onEvent: (event: FileEvent) => void;
}

/** What is known of an entry: enough to tell a move from a removal and a chmod from a write. */
interface Known {
  ino: number;
  mode: number;
  uid: number;
  gid: number;
}

interface Queued {
  op: FileEventOp | 'GONE';
  name: string;
  path: string;
  ino?: number;
}

const knownOf = (stats: Stats): Known => ({ ino: stats.ino, mode: stats.mode, uid: stats.uid, gid: stats.gid });

function lstatOrUndefined(file: string): Stats | undefined {
  try {
    return lstatSync(file);
  } catch {
    return undefined;
  }
}

export class FolderWatch {
  /** Watched folders by real path, with the path they are shown by. */
  private readonly folders = new Map<string, { watcher: FSWatcher; shown: string }>();
  private readonly known = new Map<string, Known>();
  private batch: Queued[] = [];
  private closed = false;

  constructor(private readonly options: WatchOptions) {}

  /**
   * Watches the folder at once (an error, such as ENOSPC at the inotify limit, is thrown now),
   * then learns what it holds and watches the folders below it: the promise resolves when that is done.
   */
  start(): Promise<void> {
    this.watchFolder(this.options.real, this.options.shown);
    return this.learn(this.options.real, this.options.shown, false);
  }

  close(): void {
    this.closed = true;
    for (const { watcher } of this.folders.values()) watcher.close();
    this.folders.clear();
  }

  private ignored(shownPath: string): boolean {
    return this.options.ignore.some((text) => shownPath.includes(text));
  }

  private watchFolder(real: string, shown: string): void {
    // persistent: false: a watch never keeps the agent alive by itself.
    const watcher = watch(real, { persistent: false }, (type, name) => {
      if (name !== null) this.changed(real, shown, type, name.toString());
    });
    watcher.on('error', () => this.unwatch(real));
    this.folders.set(real, { watcher, shown });
  }

  private unwatch(real: string): void {
    for (const [folder, { watcher }] of this.folders) {
      if (within(folder, real)) {
        watcher.close();
        this.folders.delete(folder);
      }
    }
  }

  /**
   * Records what a folder holds (and, recursive, watches its subfolders); `announce` sends a
   * CREATE for each entry: a new folder's content may have been written before its watch began.
   */
  private async learn(real: string, shown: string, announce: boolean): Promise<void> {
    const names = await fsp.readdir(real).catch(() => [] as string[]);
    for (const name of names) {
      if (this.closed) return;
      const childReal = joinPath(real, name);
      const childShown = joinPath(shown, name);
      const stats = await fsp.lstat(childReal).catch(() => undefined);
      if (!stats || this.options.hiddenRoots.some((root) => within(childReal, root))) continue;
      this.known.set(childReal, knownOf(stats));
      if (announce) this.queue({ op: 'CREATE', name, path: shown, ino: stats.ino });
      if (stats.isDirectory() && this.options.recursive) await this.addFolder(childReal, childShown, announce);
    }
  }

  private async addFolder(real: string, shown: string, announce: boolean): Promise<void> {
    if (this.closed || this.folders.has(real) || this.ignored(shown) || this.options.hiddenRoots.some((root) => within(real, root))) return;
    try {
      this.watchFolder(real, shown);
    } catch {
      // Gone already, or the inotify limit reached: this folder goes unwatched, the others do not.
      return;
    }
    await this.learn(real, shown, announce);
  }

  private changed(folder: string, shownFolder: string, type: string, name: string): void {
    const real = joinPath(folder, name);
    if (this.closed || this.ignored(joinPath(shownFolder, name)) || this.options.hiddenRoots.some((root) => within(real, root))) return;
    const stats = lstatOrUndefined(real);
    const before = this.known.get(real);
    if (type === 'rename') {
      if (stats) {
        this.known.set(real, knownOf(stats));
        this.queue({ op: 'CREATE', name, path: shownFolder, ino: stats.ino });
        if (stats.isDirectory() && this.options.recursive) void this.addFolder(real, joinPath(shownFolder, name), true);
      } else {
        this.known.delete(real);
        this.unwatch(real);
        this.queue({ op: 'GONE', name, path: shownFolder, ino: before?.ino });
      }
    } else if (stats) {
      const chmod = before !== undefined && (before.mode !== stats.mode || before.uid !== stats.uid || before.gid !== stats.gid);
      this.known.set(real, knownOf(stats));
      this.queue({ op: chmod ? 'CHMOD' : 'WRITE', name, path: shownFolder });
    }
    if (folder === this.options.real && !lstatOrUndefined(folder)) this.rootGone();
  }

  /** The folder watched was removed or moved: said once, and the watch ends. */
  private rootGone(): void {
    const { shown } = this.options;
    this.queue({ op: 'REMOVE', name: path.posix.basename(shown), path: path.posix.dirname(shown) });
    this.unwatch(this.options.real);
  }

  private queue(event: Queued): void {
    if (this.batch.length === 0) setImmediate(() => this.flush());
    this.batch.push(event);
  }

  private flush(): void {
    const batch = this.batch;
    this.batch = [];
    const created = new Set(batch.filter((e) => e.op === 'CREATE' && e.ino !== undefined).map((e) => e.ino));
    for (const { op, name, path: folder, ino } of batch) {
      if (this.closed) return;
      const resolved: FileEventOp = op === 'GONE' ? (ino !== undefined && created.has(ino) ? 'RENAME' : 'REMOVE') : op;
      this.options.onEvent({ op: resolved, name, path: folder, error: null });
    }
  }
}
