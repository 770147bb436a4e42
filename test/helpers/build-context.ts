import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import type { BwrapRuntime } from '../../runtime/bwrap-runtime';
import type { StoredImage } from '../../runtime/image-store';

/** An entry of a test's build context: a file's content, or a link (symbolic or hard). */
export type ContextEntry = string | Buffer | { symlink: string } | { hardlink: string };

/** One ustar header: name, mode, owner, size, time, checksum, type, link target. */
function header(name: string, size: number, type: string, linkname = ''): Buffer {
  const block = Buffer.alloc(512);
  const put = (value: string, offset: number, length: number) => block.write(value, offset, length, 'utf8');
  const octal = (value: number, length: number) => value.toString(8).padStart(length - 1, '0');
  put(name, 0, 100);
  put(octal(type === '5' ? 0o755 : 0o644, 8), 100, 8);
  put(octal(0, 8), 108, 8);
  put(octal(0, 8), 116, 8);
  put(octal(size, 12), 124, 12);
  put(octal(1_700_000_000, 12), 136, 12);
  put(type, 156, 1);
  put(linkname, 157, 100);
  put('ustar\u000000', 257, 8);
  put('        ', 148, 8);
  const sum = block.reduce((total, byte) => total + byte, 0);
  put(`${octal(sum, 7)}\u0000 `, 148, 8);
  return block;
}

/**
 * A tar.gz build context written entry by entry, so a test can put in what no well-behaved tool
 * would: `..` paths, absolute ones, links out of the context.
 */
export function buildContext(entries: Record<string, ContextEntry>): Buffer {
  const parts: Buffer[] = [];
  for (const [name, entry] of Object.entries(entries)) {
    if (typeof entry === 'string' || Buffer.isBuffer(entry)) {
      const data = Buffer.from(entry);
      parts.push(header(name, data.length, '0'), data, Buffer.alloc((512 - (data.length % 512)) % 512));
    } else if ('symlink' in entry) {
      parts.push(header(name, 0, '2', entry.symlink));
    } else {
      parts.push(header(name, 0, '1', entry.hardlink));
    }
  }
  parts.push(Buffer.alloc(1024));
  return zlib.gzipSync(Buffer.concat(parts));
}

/** How a test calls the management API as its workspace's admin. */
type WorkspaceCall = (method: 'GET' | 'PUT', url: string, payload?: Buffer, headers?: Record<string, string>) => Promise<{ statusCode: number; json(): any }>;

/**
 * A workspace image `<prefix>-<random>:1` built through the API FROM `base` (an image the test's
 * registry holds), with `ENV GREETING=from-the-image` and `/opt/added.txt` ("added by the build");
 * answers its reference once READY.
 */
export async function buildWorkspaceImage(api: WorkspaceCall, base: string, prefix: string, until: <T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number) => Promise<T>): Promise<string> {
  const image = `${prefix}-${Math.random().toString(16).slice(2, 10)}`;
  const dockerfile = [`FROM ${base}`, 'ENV GREETING=from-the-image', 'COPY added.txt /opt/added.txt'].join('\n');
  const upload = await api('PUT', `/v0/images/${image}/build?tag=1`, buildContext({ Dockerfile: dockerfile, 'added.txt': 'added by the build\n' }), { 'content-type': 'application/gzip' });
  if (upload.statusCode >= 300) throw new Error(`the build upload answered ${upload.statusCode}: ${JSON.stringify(upload.json())}`);
  const tag = await until('image built', async () => {
    const body = (await api('GET', `/v0/images/${image}/tags/1`)).json();
    return body.state === 'READY' || body.state === 'FAILED' ? body : undefined;
  }, 150_000);
  if (tag.state !== 'READY') throw new Error(`the image build FAILED: ${tag.reason}`);
  return `${image}:1`;
}

/**
 * A Dockerfile FROM `base` (a busybox image of a test registry) giving the sandbox user its own
 * part of the image: `/opt/app` (config.txt "v1", remove-me.txt, data/seed.txt) owned by uid 1000 with
 * `USER 1000` and `WORKDIR /opt/app`, and a root-owned `/opt/root.txt` beside it.
 */
export function userAppDockerfile(base: string): string {
  return [
    `FROM ${base}`,
    'RUN mkdir -p /opt/app/data && echo seed > /opt/app/data/seed.txt && echo v1 > /opt/app/config.txt && echo keep > /opt/app/remove-me.txt && chown -R 1000:1000 /opt/app && echo root-only > /opt/root.txt',
    'USER 1000',
    'WORKDIR /opt/app',
  ].join('\n');
}

/** Builds a workspace image on a runtime (no API): the context written to `archive`, then BwrapRuntime.buildImage. */
export function buildOnRuntime(runtime: BwrapRuntime, archive: string, build: { workspaceId: string; name: string; tag: string; context: Record<string, ContextEntry> }): Promise<StoredImage> {
  fs.mkdirSync(path.dirname(archive), { recursive: true });
  fs.writeFileSync(archive, buildContext(build.context));
  return runtime.buildImage({ workspaceId: build.workspaceId, name: build.name, tag: build.tag, owner: 'test', contextArchive: archive, onStep: () => undefined });
}
