import type { WorkspaceGrant } from '../../../domain/principal';
import type { ResourceStatus } from '../../../domain/resource';
import { badRequest, conflict, notFound } from '../../../domain/errors';
import type { ResourceRow, ResourceStore } from '../../../store/resources';

/** A resource's metadata as a request gives it; read-only fields sent back (workspace, createdAt, ...) are ignored. */
export interface MetadataInput {
  name: string;
  displayName?: string;
  labels?: Record<string, string>;
}

/** Which kind of resource a write is about: its path segment and how messages name one. */
export interface NamedKind {
  path: string;
  singular: string;
}

/** Names are immutable: a PUT naming another resource in its body than in its path is refused. */
export function assertNameUnchanged(bodyName: string, pathName: string): void {
  if (bodyName !== pathName) {
    throw badRequest(`body.metadata.name '${bodyName}' differs from the name in the path; names are immutable`);
  }
}

export function missingResource(singular: string, name: string, workspace: string) {
  return notFound(`${singular} '${name}' not found in workspace '${workspace}'`);
}

/** A workspace's resource of one kind by name, or the kind's 404. */
export async function findNamed(store: ResourceStore, kind: string, singular: string, workspace: WorkspaceGrant, name: string): Promise<ResourceRow> {
  const row = await store.get({ workspaceId: workspace.id, kind, name });
  if (!row) throw missingResource(singular, name, workspace.name);
  return row;
}

/** Inserts a resource in its first status; a name already taken in the workspace is a 409. */
export async function createNamed(
  store: ResourceStore,
  workspace: WorkspaceGrant,
  kind: NamedKind,
  resource: { metadata: MetadataInput; spec: Record<string, unknown>; status: ResourceStatus; message: string; actor: string },
): Promise<ResourceRow> {
  const { metadata } = resource;
  const row = await store.create(
    { workspaceId: workspace.id, kind: kind.path, name: metadata.name },
    { displayName: metadata.displayName ?? metadata.name, labels: metadata.labels ?? {}, spec: resource.spec },
    resource.status,
    resource.message,
    resource.actor,
  );
  if (!row) throw conflict(`${kind.singular} '${metadata.name}' already exists in workspace '${workspace.name}'`);
  return row;
}

/**
 * Stores a new display name, labels and spec of `current`; what the metadata leaves out stays as
 * it was. A resource deleted meanwhile is the kind's 404.
 */
export async function updateNamed(
  store: ResourceStore,
  workspace: WorkspaceGrant,
  kind: NamedKind,
  current: ResourceRow,
  change: { metadata: MetadataInput; spec: Record<string, unknown>; actor: string },
): Promise<ResourceRow> {
  const { metadata } = change;
  const updated = await store.update(
    { workspaceId: workspace.id, kind: kind.path, name: current.name },
    { displayName: metadata.displayName ?? current.display_name, labels: metadata.labels ?? current.labels, spec: change.spec },
    change.actor,
  );
  if (!updated) throw missingResource(kind.singular, current.name, workspace.name);
  return updated;
}
