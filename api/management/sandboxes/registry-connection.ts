import type { Pool } from 'pg';
import { badRequest } from '../../../domain/errors';
import { isRegistryImage } from '../../../domain/images/builtin';
import { REGISTRY_INTEGRATION } from '../../../domain/integrations/catalog';
import type { WorkspaceGrant } from '../../../domain/principal';
import { connectionIntegrations } from '../../../store/connections';

const FIELD = 'body.spec.runtime.registryConnection';

/**
 * Checks `spec.runtime.registryConnection`: it names an `oci-registry` connection of the
 * workspace, for an image of a registry. Its secrets are not opened here: the node opens them
 * for the pull, and checks there that they are for the image's registry.
 */
export async function checkRegistryConnection(pg: Pool, workspace: WorkspaceGrant, spec: { runtime?: { image?: string; registryConnection?: string } }): Promise<void> {
  const name = spec.runtime?.registryConnection;
  if (name === undefined) return;
  const image = spec.runtime?.image;
  if (image === undefined || !isRegistryImage(image)) throw badRequest(`${FIELD}: applies only to an image of a registry (spec.runtime.image naming its host)`);
  const integration = (await connectionIntegrations(pg, workspace.id, [name])).get(name);
  if (integration === undefined) throw badRequest(`${FIELD}: integration connection '${name}' not found in workspace '${workspace.name}'`);
  if (integration !== REGISTRY_INTEGRATION) throw badRequest(`${FIELD}: integration connection '${name}' is of integration '${integration}', not '${REGISTRY_INTEGRATION}'`);
}
