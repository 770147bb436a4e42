import { randomBytes } from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';

/**
 * A sandbox's port forwarder listens on a socket in a folder the sandbox can write: the host must
 * never follow something the sandbox swapped in there (a link to a host socket). A hard link in a
 * folder of the host's own pins the socket itself; `pinned` is that link, made afresh.
 */
export async function pinSocket(inSandbox: string, pinned: string): Promise<string> {
  const stat = await fsp.lstat(inSandbox);
  if (!stat.isSocket()) throw new Error(`the forwarder's socket ${inSandbox} is not a socket`);
  await fsp.mkdir(path.dirname(pinned), { recursive: true, mode: 0o700 });
  // Linked beside it and renamed over it: whoever uses the pinned path meanwhile finds one socket
  // or the other, never none, and two pinnings at once do not trip over each other.
  const fresh = `${pinned}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await fsp.link(inSandbox, fresh);
  await fsp.rename(fresh, pinned).catch(async (err: unknown) => {
    await fsp.rm(fresh, { force: true });
    throw err;
  });
  const linked = await fsp.lstat(pinned);
  if (!linked.isSocket() || linked.ino !== stat.ino) throw new Error('the forwarder socket changed while it was pinned');
  return pinned;
}
