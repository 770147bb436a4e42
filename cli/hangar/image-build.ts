import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { apiMessage, request } from './client';
import type { Credentials } from './credentials';
import { CommandError } from './errors';
import type { ProgressListener } from './progress';
import { meteredBody, packFolder } from './bundle';

/** A tag as GET /v0/images/{name}/tags/{tag} answers it (the fields followed here). */
interface ImageTag {
  state: 'PULLING' | 'BUILDING' | 'READY' | 'FAILED';
  reason: string | null;
  progress: { step: number; steps: number; instruction: string; cached: boolean } | null;
}

/**
 * The folder's content as a tag: a digest of every file's path, mode and bytes (and every link's
 * target), in name order. The same folder gives the same tag, so a deploy that changed nothing in
 * it finds the image built already, and a changed one never reuses a stale image.
 */
export function contextTag(dir: string): string {
  const hash = createHash('sha256');
  const walk = (relative: string) => {
    for (const name of fs.readdirSync(path.join(dir, relative)).sort()) {
      const entry = path.join(relative, name);
      const full = path.join(dir, entry);
      const stat = fs.lstatSync(full);
      hash.update(`${entry}\0${stat.mode}\0`);
      if (stat.isSymbolicLink()) hash.update(`-> ${fs.readlinkSync(full)}\0`);
      else if (stat.isDirectory()) walk(entry);
      else if (stat.isFile()) hash.update(fs.readFileSync(full)).update('\0');
    }
  };
  walk('');
  return `ctx-${hash.digest('hex').slice(0, 20)}`;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function stepMessage(tag: ImageTag): string {
  const step = tag.progress;
  if (!step) return `${tag.state.toLowerCase()}`;
  return `step ${step.step}/${step.steps}: ${step.instruction}${step.cached ? ' (cached)' : ''}`;
}

/** Follows the tag until it is READY (resolves) or FAILED (a CommandError with the build's reason). */
async function followBuild(credentials: Credentials, tagUrl: string, reference: string, progress: ProgressListener, deadline: number): Promise<void> {
  for (;;) {
    const answer = await request(credentials, 'GET', tagUrl);
    if (answer.status !== 200) throw new CommandError(`GET ${tagUrl}: ${answer.status} ${apiMessage(answer)}`);
    const tag = answer.json as ImageTag;
    if (tag.state === 'READY') return progress({ stage: 'build', fraction: 1, message: `image ${reference} built` });
    if (tag.state === 'FAILED') throw new CommandError(`the image build of ${reference} failed: ${tag.reason ?? 'no reason given'} (see hangar get images ${reference.split(':')[0]} -o json)`);
    const step = tag.progress;
    progress({ stage: 'build', fraction: step && step.steps > 0 ? (step.step - 1) / step.steps : undefined, message: stepMessage(tag) });
    if (Date.now() > deadline) throw new CommandError(`the image build of ${reference} did not finish in time (still ${tag.state}): follow it with hangar get images ${reference.split(':')[0]}`);
    await pause(300);
  }
}

/**
 * Builds the folder (its Dockerfile at its root) as the workspace image `<name>:<tag of its
 * content>` through PUT /v0/images/{name}/build, reporting the context's upload and each build
 * step; a tag of the same content already READY is used as it is. Resolves with the reference.
 */
export async function buildFolderImage(credentials: Credentials, dir: string, name: string, progress: ProgressListener, deadline: number): Promise<string> {
  const tag = contextTag(dir);
  const reference = `${name}:${tag}`;
  const tagUrl = `/v0/images/${encodeURIComponent(name)}/tags/${tag}`;
  const existing = await request(credentials, 'GET', tagUrl);
  const state = existing.status === 200 ? (existing.json as ImageTag).state : undefined;
  if (state === 'READY') {
    progress({ stage: 'build', fraction: 1, message: `image ${reference} is built already (same Dockerfile and files)` });
    return reference;
  }
  // One building already (an earlier deploy interrupted) is followed rather than started again.
  if (state !== 'BUILDING' && state !== 'PULLING') {
    const context = await packFolder(dir);
    const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
    const body = meteredBody(context, (sent) => progress({ stage: 'build', fraction: sent / context.length, message: `sending the build context: ${kb(sent)} of ${kb(context.length)}`, transient: true }));
    const started = await request(credentials, 'PUT', `/v0/images/${encodeURIComponent(name)}/build?tag=${tag}`, { bytes: body, contentType: 'application/gzip' });
    if (started.status !== 202) throw new CommandError(`the image build of ${reference} was refused: ${started.status} ${apiMessage(started)}`);
    progress({ stage: 'build', fraction: 0, message: `build context sent (${kb(context.length)}): building ${reference}` });
  }
  await followBuild(credentials, tagUrl, reference, progress, deadline);
  return reference;
}
