import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { WorkflowIdConflictPolicy } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { nodeTaskQueue } from '../../../domain/config';
import { expirationPolicyProblem, nextExpiry } from '../../../domain/sandbox/expiry';
import { renderSandboxUrl } from '../../../domain/sandbox/url-template';
import { sandboxWorkflowId, type SandboxKey, type SandboxSpec } from '../../../domain/sandbox/sandbox';
import { volumeMountError } from '../../../runtime/bwrap-args';
import type { SandboxLifecycleInput, sandboxLifecycle } from '../../../workflows/sandbox-lifecycle';
import { badRequest, conflict } from '../../../domain/errors';
import { NameParam, commonErrors } from '../common-schemas';
import { toEnvelope } from '../resources/envelope';
import { assertNameUnchanged, findNamed, missingResource } from '../resources/named';
import { startOwningWorkflow } from '../resources/owning-workflow';
import { ResourceStore, type ResourceRow } from '../../../store/resources';
import { requestWorkspace } from '../workspace-context';
import { SandboxEnvelope, SandboxInput } from './schemas';

const KIND = 'sandboxes';
const tags = ['sandboxes'];

/** Fields that shape the running sandbox; changing them means creating a new one. */
const IMMUTABLE_RUNTIME_FIELDS = ['image', 'memory', 'envs', 'ports'] as const;

function validateSpec(spec: SandboxSpec): void {
  (spec.lifecycle?.expirationPolicies ?? []).forEach((policy, i) => {
    const problem = expirationPolicyProblem(policy, `body.spec.lifecycle.expirationPolicies[${i}]`);
    if (problem) throw badRequest(problem);
  });
}

/**
 * /v0/sandboxes. The rows live in the shared resources table; everything that happens to a
 * sandbox after the request (start, standby, expiry, deletion) is done by its lifecycle workflow,
 * `sandbox/<workspace>/<name>`.
 */
export default async function sandboxRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const store = new ResourceStore(app.pg);
  const config = app.config;

  const keyOf = (row: ResourceRow, workspaceId: string): SandboxKey => ({ id: row.id, workspace: row.workspace, workspaceId, name: row.name });

  function lifecycleInput(row: ResourceRow, workspaceId: string, phase: SandboxLifecycleInput['phase']): SandboxLifecycleInput {
    return {
      key: keyOf(row, workspaceId),
      spec: row.spec as SandboxSpec,
      nodeQueue: nodeTaskQueue(config),
      idleTimeoutMs: config.sandboxIdleSeconds * 1000,
      createdAt: row.created_at.getTime(),
      phase,
    };
  }

  /** The workflow's copy of the spec carries the volumes' uuids, so the node needs no database. */
  function withVolumeIds(input: SandboxLifecycleInput, volumeIds: string[]): SandboxLifecycleInput {
    if (!input.spec.volumes?.length) return input;
    return { ...input, spec: { ...input.spec, volumes: input.spec.volumes.map((volume, i) => ({ ...volume, volumeId: volumeIds[i] })) } };
  }

  function envelope(row: ResourceRow) {
    const spec = row.spec as SandboxSpec;
    const state = (row.state.state as 'RUNNING' | 'STANDBY' | undefined) ?? null;
    const lastUsedAt = (row.state.lastUsedAt as string | undefined) ?? null;
    const expiry = nextExpiry({
      ttl: spec.runtime?.ttl,
      policies: spec.lifecycle?.expirationPolicies ?? [],
      createdAt: row.created_at.getTime(),
      lastUsedAt: lastUsedAt ? Date.parse(lastUsedAt) : row.created_at.getTime(),
    });
    const url = renderSandboxUrl(config.sandboxUrlTemplate, { sandbox_id: row.name, workspace_id: row.workspace, region: config.region });
    return {
      ...toEnvelope(row, url),
      state: row.status === 'DEPLOYED' ? state : null,
      lastUsedAt,
      expiresIn: expiry ? Math.max(0, Math.round((expiry.at - Date.now()) / 1000)) : null,
    };
  }

  /**
   * Checks each volume the sandbox mounts (it exists here and is DEPLOYED, its mountPath is
   * allowed) and returns their uuids in spec order, for the node.
   */
  async function resolveVolumes(workspaceId: string, workspaceName: string, spec: SandboxSpec): Promise<string[]> {
    const ids: string[] = [];
    const paths = new Set<string>();
    for (const [i, volume] of (spec.volumes ?? []).entries()) {
      const pathProblem = volumeMountError(volume.mountPath);
      if (pathProblem) throw badRequest(`body.spec.volumes[${i}].mountPath: ${pathProblem}`);
      if (paths.has(volume.mountPath)) throw badRequest(`body.spec.volumes[${i}].mountPath '${volume.mountPath}' is used by another volume`);
      paths.add(volume.mountPath);
      const row = await store.get({ workspaceId, kind: 'volumes', name: volume.name });
      if (!row) throw badRequest(`body.spec.volumes[${i}].name: volume '${volume.name}' not found in workspace '${workspaceName}'`);
      if (row.status !== 'DEPLOYED') throw badRequest(`body.spec.volumes[${i}].name: volume '${volume.name}' is ${row.status}, not DEPLOYED`);
      ids.push(row.id);
    }
    return ids;
  }

  const missing = (name: string, workspace: string) => missingResource('sandbox', name, workspace);

  app.get(
    `/v0/${KIND}`,
    { schema: { tags, summary: 'List sandboxes', response: { 200: Type.Array(SandboxEnvelope), ...commonErrors } } },
    async (request) => (await store.list(requestWorkspace(request).id, KIND)).map(envelope),
  );

  app.post(
    `/v0/${KIND}`,
    {
      schema: {
        tags,
        summary: 'Create a sandbox; it is DEPLOYING until its lifecycle workflow has started it',
        body: SandboxInput,
        response: { 200: SandboxEnvelope, 409: commonErrors[400], ...commonErrors },
      },
    },
    async (request) => {
      const workspace = requestWorkspace(request);
      const { metadata } = request.body;
      const spec = (request.body.spec ?? {}) as SandboxSpec;
      validateSpec(spec);
      const volumeIds = await resolveVolumes(workspace.id, workspace.name, spec);
      const row = await store.create(
        { workspaceId: workspace.id, kind: KIND, name: metadata.name },
        { displayName: metadata.displayName ?? metadata.name, labels: metadata.labels ?? {}, spec: spec as Record<string, unknown> },
        'DEPLOYING',
        'creating the sandbox',
        request.principal.clientId,
      );
      if (!row) throw conflict(`sandbox '${metadata.name}' already exists in workspace '${workspace.name}'`);
      await startOwningWorkflow(store, row.id, () =>
        app.temporal.workflow.start<typeof sandboxLifecycle>('sandboxLifecycle', {
          taskQueue: config.taskQueue,
          workflowId: sandboxWorkflowId(workspace.name, row.name),
          workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
          args: [withVolumeIds(lifecycleInput(row, workspace.id, 'create'), volumeIds)],
        }),
      );
      return envelope(row);
    },
  );

  app.get(
    `/v0/${KIND}/:name`,
    { schema: { tags, summary: 'Get a sandbox', params: NameParam, response: { 200: SandboxEnvelope, ...commonErrors } } },
    async (request) => {
      const workspace = requestWorkspace(request);
      const row = await findNamed(store, KIND, 'sandbox', workspace, request.params.name);
      return envelope(row);
    },
  );

  app.put(
    `/v0/${KIND}/:name`,
    {
      schema: {
        tags,
        summary: 'Update labels, display name, ttl and expiration policies',
        params: NameParam,
        body: SandboxInput,
        response: { 200: SandboxEnvelope, ...commonErrors },
      },
    },
    async (request) => {
      const workspace = requestWorkspace(request);
      const { metadata } = request.body;
      assertNameUnchanged(metadata.name, request.params.name);
      const key = { workspaceId: workspace.id, kind: KIND, name: request.params.name };
      const current = await findNamed(store, KIND, 'sandbox', workspace, request.params.name);
      const before = current.spec as SandboxSpec;
      const next = (request.body.spec ?? before) as SandboxSpec;
      validateSpec(next);
      for (const field of IMMUTABLE_RUNTIME_FIELDS) {
        if (JSON.stringify(before.runtime?.[field]) !== JSON.stringify(next.runtime?.[field])) {
          throw badRequest(`body.spec.runtime.${field} cannot change on a running sandbox; create a new sandbox instead`);
        }
      }
      if (JSON.stringify(before.volumes) !== JSON.stringify(next.volumes)) {
        throw badRequest('body.spec.volumes cannot change on a running sandbox; create a new sandbox instead');
      }
      const updated = await store.update(
        key,
        { displayName: metadata.displayName ?? current.display_name, labels: metadata.labels ?? current.labels, spec: next as Record<string, unknown> },
        request.principal.clientId,
      );
      if (!updated) throw missing(request.params.name, workspace.name);
      await app.temporal.workflow.getHandle(sandboxWorkflowId(workspace.name, updated.name)).signal('spec', next).catch(() => undefined);
      return envelope(updated);
    },
  );

  app.delete(
    `/v0/${KIND}/:name`,
    {
      schema: {
        tags,
        summary: 'Delete a sandbox; it is DELETING until its processes and files are gone',
        params: NameParam,
        response: { 200: SandboxEnvelope, ...commonErrors },
      },
    },
    async (request) => {
      const workspace = requestWorkspace(request);
      const row = await findNamed(store, KIND, 'sandbox', workspace, request.params.name);
      // Signal the running lifecycle, or start one in its delete phase if it is gone.
      await app.temporal.workflow.signalWithStart<typeof sandboxLifecycle, []>('sandboxLifecycle', {
        taskQueue: config.taskQueue,
        workflowId: sandboxWorkflowId(workspace.name, row.name),
        args: [lifecycleInput(row, workspace.id, 'delete')],
        signal: 'delete',
        signalArgs: [],
      });
      return envelope({ ...row, status: 'DELETING' });
    },
  );
}
