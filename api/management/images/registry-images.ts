import { badRequest, conflict, notFound } from '../../../domain/errors';
import { pullProgressView } from '../../../domain/images/pull-progress';
import { ImageReferenceError, parseImageReference } from '../../../domain/images/reference';
import type { WorkspaceGrant } from '../../../domain/principal';
import { canonicalReference, type RegistryImageRow, type RegistryImageStore } from '../../../store/registry-images';
import { tagView } from './tag-view';

/**
 * Images of registries under `/v0/images`: those the workspace's sandboxes, workloads and job
 * executions had pulled onto a node, grouped by repository (`127.0.0.1:5000/team/box`), one tag
 * entry per reference pulled. Their name holds a registry's host, so it never meets a workspace
 * image's or a built-in one's; in a path it is URL-encoded (`127.0.0.1%3A5000%2Fteam%2Fbox`).
 */
export function isRegistryImageName(name: string): boolean {
  return name.includes('/');
}

/** `registry/repository` and the tag (or `@digest`) of a canonical reference. */
function split(reference: string): { repository: string; version: string } {
  const at = reference.lastIndexOf('@');
  if (at > 0) return { repository: reference.slice(0, at), version: reference.slice(at) };
  const colon = reference.lastIndexOf(':');
  return { repository: reference.slice(0, colon), version: reference.slice(colon + 1) };
}

/** A registry image's reference on the API, as a tag of its repository, its pull's progress with totals (null until read). */
function registryTagView(row: RegistryImageRow) {
  return { ...tagView(split(row.reference).version, row.reference, row), progress: row.progress ? pullProgressView(row.progress) : null };
}

/** The workspace's registry images, one entry per repository, its references as tags. */
export function registryImageViews(workspace: string, rows: RegistryImageRow[]) {
  const byRepository = new Map<string, RegistryImageRow[]>();
  for (const row of rows) {
    const { repository } = split(row.reference);
    byRepository.set(repository, [...(byRepository.get(repository) ?? []), row]);
  }
  return [...byRepository].map(([name, tags]) => ({ metadata: { name, workspace, builtIn: false, registry: true }, spec: { tags: tags.map(registryTagView) } }));
}

/** A reference named in a path (`name`, or `name` and `tag`), canonical; a malformed one is a 400 naming the parameter. */
export function registryReferenceOf(name: string, tag?: string): string {
  const written = tag === undefined ? name : `${name}:${tag}`;
  try {
    if (parseImageReference(written).registry === undefined) throw badRequest(`params.name: image '${name}' names no registry; registry images are named with their host (registry.example.com/team/image)`);
    return canonicalReference(written);
  } catch (err) {
    if (err instanceof ImageReferenceError) throw badRequest(`params.${tag === undefined ? 'name' : 'tag'}: ${err.message}`);
    throw err;
  }
}

/** The workspace's pulls of a reference (a 404 when it never pulled it), as an image entry. */
export async function findRegistryImage(images: RegistryImageStore, workspace: WorkspaceGrant, reference: string): Promise<RegistryImageRow[]> {
  const rows = await images.find(workspace.id, reference);
  if (rows.length === 0) throw notFound(`image '${reference}' was not pulled by workspace '${workspace.name}'`);
  return rows;
}

/**
 * Forgets the workspace's pulls of a reference: a 409 naming its sandboxes and workloads while
 * any names it (however written), a 404 when the workspace never pulled it. The node's files stay
 * (another workspace may use the same digest; nothing is collected yet).
 */
export async function deleteRegistryImage(images: RegistryImageStore, workspace: WorkspaceGrant, reference: string): Promise<RegistryImageRow[]> {
  const rows = await findRegistryImage(images, workspace, reference);
  const users = await images.users(workspace.id, reference);
  if (users.length > 0) throw conflict(`image '${reference}' is used by ${users.join(', ')}; delete or move them to another image first`);
  if (rows.some((row) => row.state === 'PULLING')) throw conflict(`image '${reference}' is being pulled; delete it once its pull has ended`);
  await images.delete(rows.map((row) => row.id));
  return rows;
}
