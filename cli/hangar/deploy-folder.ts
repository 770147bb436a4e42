import fs from 'node:fs';
import path from 'node:path';
import { packFolder, meteredBody } from './bundle';
import { apiMessage, request } from './client';
import type { Credentials } from './credentials';
import { createOrUpdate } from './create-or-update';
import { CommandError, UsageError } from './errors';
import { buildFolderImage } from './image-build';
import type { ProgressListener } from './progress';

export { packFolder };

/** What a deployable folder declares in its hangar.json. */
export interface DeployManifest {
  kind: 'agents' | 'functions' | 'models' | 'jobs';
  name: string;
  spec: Record<string, unknown>;
}

const DEPLOYABLE_KINDS: readonly string[] = ['agents', 'functions', 'models', 'jobs'];

export interface DeployTarget {
  baseUrl: string;
  apiKey: string;
  workspace: string;
}

export interface DeployOptions {
  name?: string;
  /** A line per step, for callers without a progress display (tests, benchmarks). */
  log?: (line: string) => void;
  progress?: ProgressListener;
  timeoutMs?: number;
}

/** A resource as the API answers it (the fields the deploy reads). */
interface DeployedResource {
  status?: string;
  metadata?: { url?: string };
  events?: ResourceEvent[];
}

/** How a deploy ended: the resource as last read, its revision, and whether that revision serves. */
export interface DeployOutcome {
  resource: DeployedResource;
  revision: number;
  deployed: boolean;
  /** The last event of the revision: why it failed, or that it serves. */
  reason: string;
}

export function readManifest(dir: string): DeployManifest {
  const file = path.join(dir, 'hangar.json');
  let manifest: DeployManifest;
  try {
    manifest = JSON.parse(fs.readFileSync(file, 'utf8')) as DeployManifest;
  } catch (err) {
    throw new UsageError(`${file}: ${(err as Error).message} (it must be JSON with kind, name and spec)`);
  }
  if (!manifest || typeof manifest !== 'object' || !manifest.kind || !manifest.name) throw new UsageError(`${file}: 'kind' and 'name' are required`);
  if (!DEPLOYABLE_KINDS.includes(manifest.kind)) throw new UsageError(`${file}: 'kind' must be one of ${DEPLOYABLE_KINDS.join(', ')} (got '${String(manifest.kind)}')`);
  if (manifest.spec !== undefined && (typeof manifest.spec !== 'object' || manifest.spec === null || Array.isArray(manifest.spec))) throw new UsageError(`${file}: 'spec' must be an object`);
  return manifest;
}

const failedCall = (what: string, answer: { status: number; json: unknown }) => new CommandError(`${what} failed: ${answer.status} ${apiMessage(answer)}`);

/** The spec with its runtime's image replaced by the one built from the folder. */
function withImage(spec: Record<string, unknown>, image: string): Record<string, unknown> {
  const runtime = (spec.runtime && typeof spec.runtime === 'object' ? spec.runtime : {}) as Record<string, unknown>;
  return { ...spec, runtime: { ...runtime, image } };
}

/** Uploads the folder as the next revision, reporting the bytes sent; resolves with its number. */
async function uploadBundle(credentials: Credentials, dir: string, url: string, progress: ProgressListener): Promise<number> {
  const bundle = await packFolder(dir);
  const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
  const body = meteredBody(bundle, (sent) => progress({ stage: 'upload', fraction: sent / bundle.length, message: `${kb(sent)} of ${kb(bundle.length)}`, transient: true }));
  const upload = await request(credentials, 'PUT', url, { bytes: body, contentType: 'application/gzip' });
  if (upload.status !== 202) throw failedCall('uploading the code', upload);
  const revision = (upload.json as { revision: number }).revision;
  progress({ stage: 'upload', fraction: 1, message: `${kb(bundle.length)} sent as revision ${revision}` });
  return revision;
}

interface ResourceEvent {
  status: string;
  message: string;
}

/**
 * Where a revision stands by the resource's events: its last event, and whether it settled
 * (DEPLOYED, or failed: the resource FAILED, or `revision N failed` while an older one keeps
 * serving). Events of other revisions are not its ('revision 1' is not 'revision 10').
 */
export function revisionState(events: readonly ResourceEvent[], revision: number): { last?: ResourceEvent; settled: boolean; deployed: boolean } {
  const prefix = `revision ${revision}`;
  const mine = events.filter((e) => e.message.startsWith(`${prefix}:`) || e.message.startsWith(`${prefix} `));
  const last = mine[mine.length - 1];
  if (!last) return { settled: false, deployed: false };
  const failed = last.status === 'FAILED' || last.message.startsWith(`${prefix} failed`);
  return { last, settled: failed || last.status === 'DEPLOYED', deployed: !failed && last.status === 'DEPLOYED' };
}

/** Follows the revision's events until it is DEPLOYED or failed. */
async function followRevision(credentials: Credentials, url: string, revision: number, progress: ProgressListener, deadline: number): Promise<DeployOutcome> {
  for (;;) {
    const current = await request(credentials, 'GET', url);
    if (current.status !== 200) throw failedCall(`reading ${url}`, current);
    const resource = current.json as DeployedResource;
    const { last, settled, deployed } = revisionState(resource.events ?? [], revision);
    if (last) progress({ stage: 'deploy', message: `${last.status}: ${last.message}` });
    if (last && settled) return { resource, revision, deployed, reason: last.message };
    if (Date.now() > deadline) throw new CommandError(`revision ${revision} did not finish deploying in time (status ${resource.status}): follow it with hangar get ${url.split('/')[2]} ${url.split('/')[3]}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

/**
 * Deploys a folder: builds its Dockerfile first when it has one (the image then runs the
 * workload), creates the resource (or updates its spec), uploads the folder as the next revision
 * and follows that revision until it serves or fails.
 */
export async function deployFolderOutcome(dir: string, credentials: Credentials, options: DeployOptions = {}): Promise<DeployOutcome> {
  const log = options.log ?? (() => undefined);
  const progress = options.progress ?? ((event) => (event.fraction === 1 || event.stage === 'deploy' ? log(`${event.stage}: ${event.message}`) : undefined));
  const deadline = Date.now() + (options.timeoutMs ?? 300_000);
  const manifest = readManifest(dir);
  const name = options.name ?? manifest.name;
  let spec = manifest.spec ?? {};
  if (fs.existsSync(path.join(dir, 'Dockerfile'))) {
    // Which image runs it must be unambiguous: the Dockerfile's, or the one hangar.json names.
    const named = (spec.runtime as { image?: unknown } | undefined)?.image;
    if (named !== undefined) throw new UsageError(`${path.join(dir, 'hangar.json')}: spec.runtime.image is '${String(named)}' but the folder has a Dockerfile, whose image would run it: remove one of them`);
    spec = withImage(spec, await buildFolderImage(credentials, dir, name, progress, deadline));
  }
  const { action } = await createOrUpdate(credentials, manifest.kind, manifest.kind, { metadata: { name }, spec });
  log(`${action} ${manifest.kind}/${name}`);
  const revision = await uploadBundle(credentials, dir, `/v0/${manifest.kind}/${name}/code`, progress);
  return followRevision(credentials, `/v0/${manifest.kind}/${name}`, revision, progress, deadline);
}

/** deployFolderOutcome for callers that read the resource only (tests, benchmarks). */
export async function deployFolder(dir: string, target: DeployTarget, options: DeployOptions = {}) {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return (await deployFolderOutcome(dir, { url: target.baseUrl, apiKey: target.apiKey, workspace: target.workspace }, options)).resource as any;
}
