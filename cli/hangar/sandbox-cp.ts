import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { apiMessage, call, request, send } from './client';
import type { CommandContext } from './context';
import { loadCredentials, type Credentials } from './credentials';
import { CommandError, UsageError } from './errors';
import { sandboxUrl } from './sandbox-address';

export const CP_USAGE = 'usage: hangar sandbox cp <src> <dst>, one of them <sandbox>:/absolute/path (a file or a directory)';

/** One side of a copy: a local path, or a path in a sandbox (`name:/path`). */
export type CopyEnd = { sandbox: string; path: string } | { local: string };

/**
 * `name:/path` is a sandbox's path; anything else is local (`./a:b` or `/x:y` too, as with scp,
 * since a sandbox name has no `/` or `.`). A sandbox path must be absolute: the API has no
 * working folder to resolve a relative one against.
 */
export function parseCopyEnd(word: string): CopyEnd {
  const match = /^([a-z0-9][a-z0-9-]*):(.*)$/.exec(word);
  if (!match) return { local: word };
  if (!match[2].startsWith('/')) throw new UsageError(`'${word}': the sandbox path must be absolute (${match[1]}:/path/in/sandbox)`);
  return { sandbox: match[1], path: match[2] };
}

/** The filesystem route of a sandbox path, each segment percent-encoded. */
const fileUrl = (base: string, sandboxPath: string, query = '') =>
  `${base}/filesystem${sandboxPath.split('/').map(encodeURIComponent).join('/')}${query}`;

interface TreeFile {
  path: string;
  permissions: string;
}
interface TreeDirectory {
  path: string;
  files: TreeFile[];
  subdirectories: TreeDirectory[];
  truncated?: boolean;
}

/** What a sandbox path is: a file, a directory, or nothing (HEAD of the download: bytes for a file, JSON for a directory). */
async function remoteKind(credentials: Credentials, base: string, sandboxPath: string): Promise<'file' | 'directory' | undefined> {
  const head = await send(credentials, 'HEAD', fileUrl(base, sandboxPath, '?download=true'));
  if (head.status === 404) return undefined;
  if (!head.ok) throw new CommandError(`${sandboxPath} in the sandbox: ${head.status} ${head.statusText}`);
  return /octet-stream/.test(head.headers.get('content-type') ?? '') ? 'file' : 'directory';
}

const mode = (permissions: string) => parseInt(permissions, 8) & 0o7777;

async function downloadFile(credentials: Credentials, base: string, from: string, to: string, permissions?: string): Promise<number> {
  const response = await send(credentials, 'GET', fileUrl(base, from, '?download=true'));
  if (!response.ok || !response.body) throw new CommandError(`reading ${from} in the sandbox: ${response.status} ${apiMessage({ status: response.status, json: await response.text() })}`);
  await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream), fs.createWriteStream(to));
  if (permissions) fs.chmodSync(to, mode(permissions));
  return 1;
}

/** Copies a sandbox file or directory (every file below it, with its mode) to a local path. */
async function download(credentials: Credentials, base: string, from: string, local: string): Promise<number> {
  const kind = await remoteKind(credentials, base, from);
  if (!kind) throw new CommandError(`${from} does not exist in the sandbox`);
  const into = fs.statSync(local, { throwIfNoEntry: false })?.isDirectory() ? path.join(local, path.posix.basename(from)) : local;
  if (kind === 'file') return downloadFile(credentials, base, from, into);
  const tree = await call<TreeDirectory>(credentials, 'GET', `${base}/filesystem/tree${from.split('/').map(encodeURIComponent).join('/')}?depth=64&maxEntries=100000`);
  if (tree.truncated) throw new CommandError(`${from} holds more than 100,000 entries or 64 levels: copy its parts one by one`);
  let copied = 0;
  const walk = async (directory: TreeDirectory, target: string) => {
    fs.mkdirSync(target, { recursive: true });
    for (const file of directory.files) copied += await downloadFile(credentials, base, file.path, path.join(target, path.posix.basename(file.path)), file.permissions);
    for (const sub of directory.subdirectories) await walk(sub, path.join(target, path.posix.basename(sub.path)));
  };
  await walk(tree, into);
  return copied;
}

async function uploadFile(credentials: Credentials, base: string, local: string, to: string): Promise<number> {
  const permissions = (fs.statSync(local).mode & 0o777).toString(8).padStart(4, '0');
  const answer = await request(credentials, 'PUT', fileUrl(base, to, `?permissions=${permissions}`), { bytes: fs.createReadStream(local), contentType: 'application/octet-stream' });
  if (answer.status !== 200) throw new CommandError(`writing ${to} in the sandbox: ${answer.status} ${apiMessage(answer)}`);
  return 1;
}

/** Copies a local file or directory into a sandbox; links are not followed (said on stderr). */
async function upload(ctx: CommandContext, credentials: Credentials, local: string, base: string, to: string): Promise<number> {
  const stat = fs.lstatSync(local, { throwIfNoEntry: false });
  if (!stat) throw new UsageError(`${local} does not exist`);
  const into = to.endsWith('/') || (await remoteKind(credentials, base, to)) === 'directory' ? path.posix.join(to, path.basename(path.resolve(local))) : to;
  if (!stat.isDirectory()) return uploadFile(credentials, base, local, into);
  let copied = 0;
  const walk = async (dir: string, target: string) => {
    const permissions = (fs.statSync(dir).mode & 0o777).toString(8).padStart(4, '0');
    await call(credentials, 'PUT', fileUrl(base, target), { isDirectory: true, permissions });
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const source = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(source, path.posix.join(target, entry.name));
      else if (entry.isFile()) copied += await uploadFile(credentials, base, source, path.posix.join(target, entry.name));
      else ctx.err(`hangar: skipped ${source}: only files and directories are copied\n`);
    }
  };
  await walk(local, into);
  return copied;
}

/** `hangar sandbox cp <src> <dst>`: files and directories between this machine and a sandbox, as bytes. */
export async function copy(ctx: CommandContext, words: string[]): Promise<number> {
  if (words.length !== 2) throw new UsageError(CP_USAGE);
  const [from, to] = words.map(parseCopyEnd);
  if ('sandbox' in from === 'sandbox' in to) throw new UsageError(`one side must be local and the other <sandbox>:/path: ${CP_USAGE}`);
  const credentials = loadCredentials(ctx.env);
  const copied =
    'sandbox' in from
      ? await download(credentials, await sandboxUrl(credentials, from.sandbox), from.path, (to as { local: string }).local)
      : await upload(ctx, credentials, from.local, await sandboxUrl(credentials, (to as { sandbox: string }).sandbox), (to as { path: string }).path);
  ctx.out(`copied ${copied} file${copied === 1 ? '' : 's'}\n`);
  return 0;
}
