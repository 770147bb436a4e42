import type { Client } from '@temporalio/client';
import type { Pool } from 'pg';
import type { HangarConfig } from '../../../domain/config';
import { ApiError, badRequest, conflict, notFound } from '../../../domain/errors';
import { findIntegration, INTEGRATIONS, type IntegrationDefinition } from '../../../domain/integrations/catalog';
import { connectionInUseProblem } from '../../../domain/integrations/connection-use';
import { mergeSecretUpdate, sameSecrets, secretsProblem } from '../../../domain/integrations/secrets';
import type { WorkspaceGrant } from '../../../domain/principal';
import { awaitConnectionRollout, startConnectionRollout, type RolloutOutcome } from '../../../control-plane/connection-rollout';
import type { ConnectionRow, ConnectionStore } from '../../../store/connections';
import { assertNameUnchanged } from '../resources/named';

/** How long a PUT that changed the secrets waits for the bound functions to serve with them. */
const ROLLOUT_WAIT_MS = 60_000;

/** What the connection operations work with: the connections, and what a rollout of new secrets needs. */
export interface ConnectionServices {
  store: ConnectionStore;
  pg: Pool;
  temporal: Client;
  config: HangarConfig;
  log: { warn(details: object, message: string): void };
}

interface ConnectionMetadata {
  name: string;
  displayName: string;
  labels?: Record<string, string>;
}

export interface ConnectionCreateRequest {
  metadata: ConnectionMetadata;
  spec: { integration: string; secret: Record<string, string> };
}

export interface ConnectionUpdateRequest {
  metadata: ConnectionMetadata;
  spec?: { integration?: string; secret?: Record<string, string> };
}

const missing = (name: string, workspace: string) => notFound(`integration connection '${name}' not found in workspace '${workspace}'`);

function integrationNamed(name: string): IntegrationDefinition {
  const integration = findIntegration(name);
  if (!integration) throw badRequest(`spec.integration: unknown integration '${name}' (known: ${INTEGRATIONS.map((i) => i.name).join(', ')})`);
  return integration;
}

function checkSecrets(integration: IntegrationDefinition, secret: Record<string, string>): void {
  const problem = secretsProblem(integration, secret);
  if (problem) throw badRequest(problem);
}

export async function findConnection(services: ConnectionServices, workspace: WorkspaceGrant, name: string): Promise<ConnectionRow> {
  const row = await services.store.get(workspace.id, name);
  if (!row) throw missing(name, workspace.name);
  return row;
}

/** Stores a connection of a catalog integration whose secrets that integration accepts. */
export async function createConnection(services: ConnectionServices, workspace: WorkspaceGrant, body: ConnectionCreateRequest, actor: string): Promise<ConnectionRow> {
  const { metadata, spec } = body;
  const integration = integrationNamed(spec.integration);
  checkSecrets(integration, spec.secret);
  const created = await services.store.create(
    workspace.id,
    { name: metadata.name, displayName: metadata.displayName, labels: metadata.labels ?? {}, integration: integration.name, secret: spec.secret },
    actor,
  );
  if (!created) throw conflict(`integration connection '${metadata.name}' already exists in workspace '${workspace.name}'`);
  return created;
}

/**
 * Stores new metadata and secrets (masked values sent back keep the stored ones). New secrets
 * reach the running servers bound to the connection before this returns: a call made after it is
 * served with them (see connection-rollout.ts); `rollout` then says how each function fared.
 */
export async function updateConnection(
  services: ConnectionServices,
  workspace: WorkspaceGrant,
  name: string,
  body: ConnectionUpdateRequest,
  actor: string,
): Promise<{ row: ConnectionRow; rollout?: RolloutOutcome[] }> {
  const { store } = services;
  const { metadata, spec } = body;
  assertNameUnchanged(metadata.name, name);
  const current = await findConnection(services, workspace, name);
  if (spec?.integration !== undefined && spec.integration !== current.integration) {
    throw badRequest(`spec.integration cannot change (it is '${current.integration}'): create another connection`);
  }
  const stored = await store.openSecrets(current);
  const secret = spec?.secret ? mergeSecretUpdate(stored, spec.secret) : stored;
  checkSecrets(integrationNamed(current.integration), secret);
  if (!(await store.update(current, { displayName: metadata.displayName, labels: metadata.labels ?? current.labels, secret }, actor))) throw missing(name, workspace.name);
  const row = (await store.get(workspace.id, name)) ?? current;
  if (sameSecrets(stored, secret)) return { row };
  return { row, rollout: await rollOutSecrets(services, workspace, name, actor) };
}

async function rollOutSecrets(services: ConnectionServices, workspace: WorkspaceGrant, name: string, actor: string): Promise<RolloutOutcome[]> {
  const targets = await startConnectionRollout(services, workspace, name, actor).catch((err: Error) => {
    services.log.warn({ err: err.message, connection: name }, 'could not restart the functions bound to a connection');
    throw new ApiError(
      503,
      'unavailable',
      `integration connection '${name}' was updated, but the functions bound to it could not be restarted with the new secrets ` +
        '(the workflow service is unavailable): PUT those functions again to restart them',
    );
  });
  return awaitConnectionRollout(services.pg, targets, { timeoutMs: ROLLOUT_WAIT_MS });
}

/** Deletes a connection no function or model names any more (409 otherwise). */
export async function deleteConnection(services: ConnectionServices, workspace: WorkspaceGrant, name: string): Promise<ConnectionRow> {
  const inUse = connectionInUseProblem(name, await services.store.boundWorkloads(workspace.id, name));
  if (inUse) throw new ApiError(409, 'conflict', inUse, { code: 409 });
  const deleted = await services.store.delete(workspace.id, name);
  if (!deleted) throw missing(name, workspace.name);
  return deleted;
}
