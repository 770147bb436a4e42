import { execFile } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { VolumeStorageKind } from '../domain/volume/volume';

const run = promisify(execFile);

export interface VolumeStoreOptions {
  dataDir: string;
  /** Host uid and gid of the sandbox user, who owns a volume's root folder (1000, as the runtime's default). */
  owner?: { uid: number; gid: number };
}

/**
 * A node's volumes: `<dataDir>/volumes/<id>.img`, an ext4 image with the volume's size, loop-mounted
 * at `<dataDir>/volumes/mnt/<id>` when a sandbox needs it. Where loop devices are not available
 * (no /dev/loop-control, not root) a volume is a plain folder at the same mount point, and its
 * size is not enforced. Every operation is idempotent, so activities may retry.
 */
export class VolumeStore {
  private readonly root: string;
  private readonly owner: { uid: number; gid: number };

  constructor(options: VolumeStoreOptions) {
    this.root = path.join(options.dataDir, 'volumes');
    this.owner = options.owner ?? { uid: 1000, gid: 1000 };
  }

  imagePath(id: string): string {
    return path.join(this.root, `${id}.img`);
  }

  mountPoint(id: string): string {
    return path.join(this.root, 'mnt', id);
  }

  /** Why this node cannot loop-mount, or undefined when it can. */
  loopUnavailable(): string | undefined {
    if (process.getuid?.() !== 0) return 'the node worker does not run as root';
    if (!fs.existsSync('/dev/loop-control')) return 'the machine has no loop devices';
    return undefined;
  }

  /** Creates the volume's storage; says which kind it got and, for a folder, why. */
  async create(id: string, sizeMb: number): Promise<{ kind: VolumeStorageKind; reason?: string }> {
    await fsp.mkdir(path.join(this.root, 'mnt'), { recursive: true, mode: 0o700 });
    const unavailable = this.loopUnavailable();
    if (!unavailable) {
      try {
        await this.createImage(id, sizeMb);
        return { kind: 'loop' };
      } catch (err) {
        await fsp.rm(this.imagePath(id), { force: true });
        return { kind: 'folder', ...(await this.createFolder(id, `creating the ext4 image failed: ${(err as Error).message.trim()}`)) };
      }
    }
    return { kind: 'folder', ...(await this.createFolder(id, unavailable)) };
  }

  /** The host folder holding the volume's files, mounting its image first when needed. */
  async ensureMounted(id: string): Promise<string> {
    const target = this.mountPoint(id);
    if (!fs.existsSync(this.imagePath(id))) {
      if (!fs.existsSync(target)) throw new Error(`volume ${id} has no storage on this node`);
      return target;
    }
    if (await this.isMounted(target)) return target;
    if (fs.existsSync(this.growMarker(id))) await this.growOffline(id);
    await fsp.mkdir(target, { recursive: true, mode: 0o755 });
    await run('mount', ['-o', 'loop', this.imagePath(id), target]);
    return target;
  }

  /**
   * Grows the image (never shrinks it). A mounted volume grows online where the kernel lets us;
   * otherwise the file system is grown the next time it is mounted, and the result says why.
   */
  async grow(id: string, sizeMb: number): Promise<{ pending?: string }> {
    const image = this.imagePath(id);
    if (!fs.existsSync(image)) return {}; // a folder has no size to change
    if ((await fsp.stat(image)).size < sizeMb * 1024 * 1024) await run('truncate', ['-s', `${sizeMb}M`, image]);
    const device = await this.loopDevice(image);
    if (!device) {
      await this.growOffline(id);
      return {};
    }
    try {
      await run('losetup', ['-c', device]);
      await run('resize2fs', [device]);
      return {};
    } catch (err) {
      await fsp.writeFile(this.growMarker(id), '');
      const detail = (err as { stderr?: string }).stderr?.trim().split('\n').at(-1) ?? (err as Error).message;
      return { pending: detail };
    }
  }

  /** Unmounts the volume and deletes its files. */
  async remove(id: string): Promise<void> {
    const target = this.mountPoint(id);
    if (await this.isMounted(target)) await run('umount', [target]);
    await fsp.rm(target, { recursive: true, force: true });
    await fsp.rm(this.imagePath(id), { force: true });
    await fsp.rm(this.growMarker(id), { force: true });
  }

  private async createImage(id: string, sizeMb: number): Promise<void> {
    const image = this.imagePath(id);
    // Written under a temporary name so a retry never finds a half-made file system.
    const partial = `${image}.partial`;
    if (fs.existsSync(image)) return;
    await run('truncate', ['-s', `${sizeMb}M`, partial]);
    await run('mkfs.ext4', ['-q', '-F', '-E', `root_owner=${this.owner.uid}:${this.owner.gid}`, partial]);
    await fsp.rename(partial, image);
  }

  /** Marks an image whose file system is smaller than the file: grown before its next mount. */
  private growMarker(id: string): string {
    return path.join(this.root, `${id}.grow`);
  }

  private async growOffline(id: string): Promise<void> {
    const image = this.imagePath(id);
    await run('e2fsck', ['-f', '-p', image]);
    await run('resize2fs', [image]);
    await fsp.rm(this.growMarker(id), { force: true });
  }

  private async createFolder(id: string, reason: string): Promise<{ reason: string }> {
    const target = this.mountPoint(id);
    await fsp.mkdir(target, { recursive: true, mode: 0o755 });
    await fsp.chown(target, this.owner.uid, this.owner.gid).catch(() => undefined);
    return { reason };
  }

  private async isMounted(target: string): Promise<boolean> {
    const mounts = await fsp.readFile('/proc/self/mounts', 'utf8');
    // /proc/self/mounts escapes spaces and the like as octal; our paths have none of them.
    return mounts.split('\n').some((line) => line.split(' ')[1] === target);
  }

  private async loopDevice(image: string): Promise<string | undefined> {
    const { stdout } = await run('losetup', ['-j', image]);
    return stdout.split(':')[0]?.trim() || undefined;
  }
}
