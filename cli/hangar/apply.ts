import fs from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { choice, parseArgs } from './args';
import type { CommandContext } from './context';
import { createOrUpdate } from './create-or-update';
import { loadCredentials } from './credentials';
import { UsageError } from './errors';
import { findManifestKind, type CliKind } from './kinds';

const USAGE = 'usage: hangar apply -f <file.yaml> [--output table|json]';

interface Manifest {
  kind: CliKind;
  name: string;
  body: { metadata: Record<string, unknown>; spec?: unknown };
}

/** The documents of a manifest file, checked before anything is sent so a bad file changes nothing. */
export function readManifests(file: string, text: string): Manifest[] {
  const manifests: Manifest[] = [];
  for (const [index, doc] of parseAllDocuments(text).entries()) {
    const where = `${file} document ${index + 1}`;
    if (doc.errors.length > 0) throw new UsageError(`${where}: ${doc.errors[0].message}`);
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) continue;
    if (typeof value !== 'object' || Array.isArray(value)) throw new UsageError(`${where}: a manifest is a mapping with kind, metadata and spec`);
    const { kind, metadata, spec, ...other } = value as Record<string, unknown>;
    const unknownKeys = Object.keys(other).filter((key) => key !== 'apiVersion');
    if (unknownKeys.length > 0) throw new UsageError(`${where}: unknown field '${unknownKeys[0]}' (a manifest has kind, metadata and spec)`);
    const cliKind = findManifestKind(kind, where);
    if (!metadata || typeof metadata !== 'object' || Array.isArray(metadata)) throw new UsageError(`${where}: metadata is required (a mapping with name)`);
    const name = (metadata as { name?: unknown }).name;
    if (typeof name !== 'string' || !name) throw new UsageError(`${where}: metadata.name is required (a string)`);
    manifests.push({ kind: cliKind, name, body: { metadata: metadata as Record<string, unknown>, ...(spec === undefined ? {} : { spec }) } });
  }
  if (manifests.length === 0) throw new UsageError(`${file}: no manifest in it`);
  return manifests;
}

/** `hangar apply -f <file>`: every document in order; stops at the first the API refuses. */
export async function apply(ctx: CommandContext): Promise<number> {
  const args = parseArgs(ctx.argv, ['file', 'output']);
  const output = choice(args, 'output', ['table', 'json'], 'table');
  const file = args.options.get('file');
  if (!file || args.positional.length > 0) throw new UsageError(USAGE);
  let text: string;
  try {
    text = file === '-' ? fs.readFileSync(0, 'utf8') : fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const manifests = readManifests(file, text);
  const credentials = loadCredentials(ctx.env);
  const results: unknown[] = [];
  for (const manifest of manifests) {
    const { action, resource } = await createOrUpdate(credentials, manifest.kind.path, manifest.kind.name, { ...manifest.body, metadata: { ...manifest.body.metadata, name: manifest.name } });
    results.push(resource);
    if (output === 'table') ctx.out(`${manifest.kind.name}/${manifest.name} ${action}\n`);
  }
  if (output === 'json') ctx.out(`${JSON.stringify(results, null, 2)}\n`);
  return 0;
}
