import type { WorkspaceGrant } from '../../../domain/principal';
import { badRequest, notFound } from '../../../domain/errors';
import type { ResourceRow, ResourceStore } from '../../../store/resources';

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
