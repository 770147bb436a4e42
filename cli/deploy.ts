import fs from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';

/** What a deployable folder declares in its hangar.json. */
export interface DeployManifest {
  kind: 'agents' | 'functions' | 'models' | 'jobs';
  name: string;
  spec: Record<string, unknown>;
}

export interface DeployTarget {
  baseUrl: string;
  apiKey: string;
  workspace: string;
}

export function readManifest(dir: string): DeployManifest {
  const file = path.join(dir, 'hangar.json');
  const manifest = JSON.parse(fs.readFileSync(file, 'utf8')) as DeployManifest;
  if (!manifest.kind || !manifest.name) throw new Error(`${file}: 'kind' and 'name' are required`);
  return manifest;
}

/** The folder as a tar.gz bundle (paths relative to the folder). */
export async function packFolder(dir: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const stream = tar.c({ gzip: true, cwd: dir, portable: true }, fs.readdirSync(dir));
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function call(target: DeployTarget, method: string, url: string, body?: unknown, contentType = 'application/json') {
  const response = await fetch(`${target.baseUrl}${url}`, {
    method,
    headers: { authorization: `Bearer ${target.apiKey}`, 'x-service-workspace': target.workspace, ...(body === undefined ? {} : { 'content-type': contentType }) },
    body: body === undefined ? undefined : Buffer.isBuffer(body) ? new Uint8Array(body) : JSON.stringify(body),
  });
  const text = await response.text();
  // The deploy reads a few fields of whatever the API answered, and prints the rest as it came.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: response.status, json };
}

/**
 * Deploys a folder: creates the resource (or updates its spec), uploads the folder as the next
 * revision and waits until the deployment ends. Resolves with the final resource.
 */
export async function deployFolder(dir: string, target: DeployTarget, options: { name?: string; log?: (line: string) => void; timeoutMs?: number } = {}) {
  const log = options.log ?? (() => undefined);
  const manifest = readManifest(dir);
  const name = options.name ?? manifest.name;
  const resource = { metadata: { name }, spec: manifest.spec };
  const created = await call(target, 'POST', `/v0/${manifest.kind}`, resource);
  if (created.status === 409) {
    const updated = await call(target, 'PUT', `/v0/${manifest.kind}/${name}`, resource);
    if (updated.status !== 200) throw new Error(`updating ${manifest.kind}/${name} failed (${updated.status}): ${JSON.stringify(updated.json)}`);
    log(`updated ${manifest.kind}/${name}`);
  } else if (created.status !== 200) {
    throw new Error(`creating ${manifest.kind}/${name} failed (${created.status}): ${JSON.stringify(created.json)}`);
  } else log(`created ${manifest.kind}/${name}`);

  const bundle = await packFolder(dir);
  const upload = await call(target, 'PUT', `/v0/${manifest.kind}/${name}/code`, bundle, 'application/gzip');
  if (upload.status !== 202) throw new Error(`uploading the code failed (${upload.status}): ${JSON.stringify(upload.json)}`);
  const revision = upload.json.revision as number;
  log(`uploaded ${bundle.length} bytes as revision ${revision}`);

  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  let seen = 0;
  for (;;) {
    const current = await call(target, 'GET', `/v0/${manifest.kind}/${name}`);
    const events = (current.json.events ?? []) as { status: string; message: string }[];
    const mine = events.filter((e) => e.message.startsWith(`revision ${revision}`));
    for (const event of mine.slice(seen)) log(`${event.status}: ${event.message}`);
    seen = mine.length;
    const last = mine[mine.length - 1];
    if (last && (last.status === 'DEPLOYED' || last.status === 'FAILED' || last.message.includes('failed'))) return current.json;
    if (Date.now() > deadline) throw new Error(`revision ${revision} did not finish deploying in time; status ${current.json.status}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

function defaultApiKey(): string {
  if (process.env.HANGAR_API_KEY) return process.env.HANGAR_API_KEY;
  const file = path.join(process.env.HANGAR_DATA_DIR ?? '.data', 'credentials.json');
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as { apiKey: string }).apiKey;
}

async function main() {
  const args = process.argv.slice(2);
  const nameAt = args.indexOf('--name');
  const name = nameAt >= 0 ? args.splice(nameAt, 2)[1] : undefined;
  const dir = args[0];
  if (!dir) {
    console.error('usage: node dist/cli/deploy.js <folder with hangar.json> [--name <name>]');
    process.exit(2);
  }
  const target = {
    baseUrl: process.env.HANGAR_BASE_URL ?? 'http://127.0.0.1:8080',
    apiKey: defaultApiKey(),
    workspace: process.env.HANGAR_WORKSPACE ?? 'default',
  };
  const result = await deployFolder(path.resolve(dir), target, { name, log: (line) => console.log(line) });
  console.log(`${result.status}: ${result.metadata?.url ?? ''}`);
  if (result.status !== 'DEPLOYED') process.exit(1);
}

if (require.main === module) {
  main().catch((err) => {
    console.error(`deploy failed: ${(err as Error).message}`);
    process.exit(1);
  });
}
