import type { Pool } from 'pg';
import { badRequest } from '../../../domain/errors';
import { workloadNetworkProblem } from '../../../domain/workloads/network';
import type { WorkloadSpec } from '../../../domain/workloads/workload';
import type { WorkspaceGrant } from '../../../domain/principal';
import type { ResourceRow, ResourceStore } from '../../../store/resources';
import { checkRuntimeImage, type RuntimeImageSpec } from '../images/runtime-image';
import { withRecordedImage } from '../../../domain/images/recorded-image';
import { defaultWorkloadImage } from '../../../domain/workloads/platform-code';
import type { ResourceKind } from './kinds';
import { assertNameUnchanged, createNamed, findNamed, missingResource, updateNamed, type MetadataInput } from './named';

/** What the workload routes work with: the resource rows and the database a kind's checks read. */
export interface ResourceServices {
  store: ResourceStore;
  pg: Pool;
  /** Whether the platform's nodes give outbound network (config `sandboxNetwork`): else a `spec.network` asking for it is a 400. */
  nodesHaveNetwork: boolean;
}

/** The kind's own checks, after those every workload's spec has (its `spec.network`). */
async function checkSpec(services: ResourceServices, kind: ResourceKind, workspace: WorkspaceGrant, spec: Record<string, unknown>, before?: Record<string, unknown>): Promise<void> {
  const problem = workloadNetworkProblem(kind.path, spec as WorkloadSpec, services.nodesHaveNetwork);
  if (problem) throw badRequest(problem);
  await checkRuntimeImage(services.pg, workspace, spec as RuntimeImageSpec, before as RuntimeImageSpec | undefined);
  await kind.validate?.(services, workspace, spec);
}

/** The body of a create or update: metadata and an optional spec (none means `{}` on create, unchanged on update). */
export interface ResourceRequest {
  metadata: MetadataInput;
  /** Checked against the kind's schema by the route. */
  spec?: unknown;
}

/**
 * Checks the spec with the kind's own rules, then inserts the resource in the kind's first
 * status, its image recorded in its spec (domain/images/recorded-image.ts).
 */
export async function createResource(
  services: ResourceServices,
  kind: ResourceKind,
  workspace: WorkspaceGrant,
  body: ResourceRequest,
  actor: string,
): Promise<ResourceRow> {
  const given = (body.spec ?? {}) as WorkloadSpec;
  const spec = withRecordedImage(given, undefined, defaultWorkloadImage(kind.path, given)) as Record<string, unknown>;
  await checkSpec(services, kind, workspace, spec);
  return createNamed(services.store, workspace, kind, { metadata: body.metadata, spec, status: kind.initialStatus, message: kind.initialMessage(spec), actor });
}

/**
 * Replaces metadata and spec of a resource (the spec only when the body has one), checked like a
 * new one; a spec naming no image keeps the one recorded.
 */
export async function updateResource(
  services: ResourceServices,
  kind: ResourceKind,
  workspace: WorkspaceGrant,
  name: string,
  body: ResourceRequest,
  actor: string,
): Promise<ResourceRow> {
  assertNameUnchanged(body.metadata.name, name);
  const current = await findNamed(services.store, kind.path, kind.singular, workspace, name);
  const spec = withRecordedImage((body.spec as Record<string, unknown> | undefined) ?? current.spec, current.spec);
  await checkSpec(services, kind, workspace, spec, current.spec);
  return updateNamed(services.store, workspace, kind, current, { metadata: body.metadata, spec, actor });
}

export async function deleteResource(services: ResourceServices, kind: ResourceKind, workspace: WorkspaceGrant, name: string): Promise<ResourceRow> {
  const deleted = await services.store.delete({ workspaceId: workspace.id, kind: kind.path, name });
  if (!deleted) throw missingResource(kind.singular, name, workspace.name);
  return deleted;
}
