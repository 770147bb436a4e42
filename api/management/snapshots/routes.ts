import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { notFound } from '../../../domain/errors';
import { snapshotSpecView } from '../../../domain/sandbox/snapshot';
import { ResourceStore } from '../../../store/resources';
import { WorkspaceImageStore } from '../../../store/workspace-images';
import { SandboxSnapshotStore, type SnapshotRow } from '../../../store/sandbox-snapshots';
import { CaptureNotices } from './capture-notices';
import { NameParam, commonErrors } from '../common-schemas';
import { requestWorkspace } from '../workspace-context';
import { ForkInput, ForkResult, RestoreResult, SandboxSnapshotParams, Snapshot, SnapshotInput, SnapshotParams } from './schemas';
import { captureSnapshot, deleteSnapshot, findSnapshot, forkSandbox, listSnapshots, restoreSandbox, type SnapshotServices } from './snapshot-service';

const tags = ['snapshots'];

/** A snapshot as the reference shows it. */
function snapshotView(workspace: string, row: SnapshotRow) {
  return {
    id: row.id,
    name: row.name,
    workspace,
    status: row.status === 'deleting' ? ('failed' as const) : row.status,
    message: row.message,
    createdAt: row.created_at.toISOString(),
    createdBy: row.created_by,
    sandboxName: row.source_name,
    source: { name: row.source_name, kind: 'sandbox' as const, deleted: row.source_deleted },
    spec: snapshotSpecView(row.source_spec),
    sizeBytes: row.size_bytes === null ? null : Number(row.size_bytes),
  };
}

const one = { 200: Snapshot, 409: commonErrors[400], ...commonErrors };
const forked = { 200: ForkResult, 409: commonErrors[400], ...commonErrors };

/**
 * Snapshots and forks of sandboxes, in the reference's shape: /v0/snapshots (the workspace's,
 * by id or name) and /v0/sandboxes/{name}/snapshots (one sandbox's), and the forks of either.
 * Each snapshot is driven by its workflow `snapshot/<workspace>/<id>` (snapshot-service.ts).
 */
export default async function snapshotRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const notices = new CaptureNotices(app.pg);
  app.addHook('onClose', () => notices.close());
  const services: SnapshotServices = { store: new ResourceStore(app.pg), pg: app.pg, snapshots: new SandboxSnapshotStore(app.pg), notices, temporal: app.temporal, config: app.config, images: new WorkspaceImageStore(app.pg) };
  const view = (workspace: string) => (row: SnapshotRow) => snapshotView(workspace, row);

  // A bare array, as every list of this API (the reference SDK reads a page or an array alike).
  app.get('/v0/snapshots', { schema: { tags, summary: "The workspace's snapshots, newest first", response: { 200: Type.Array(Snapshot), ...commonErrors } } }, async (request) => {
    const workspace = requestWorkspace(request);
    return (await listSnapshots(services, workspace)).map(view(workspace.name));
  });
  app.post('/v0/snapshots', { schema: { tags, summary: 'Capture a sandbox (body.source) into a snapshot', body: SnapshotInput, response: one } }, async (request, reply) => {
    const workspace = requestWorkspace(request);
    if (!request.body.source) return reply.code(400).send({ error: 'bad_request', message: 'body.source is required: the sandbox to capture' });
    return snapshotView(workspace.name, await captureSnapshot(services, workspace, { name: request.body.name, source: request.body.source.name }, request.principal.clientId));
  });
  app.get('/v0/snapshots/:name', { schema: { tags, summary: 'A snapshot, by id or name', params: SnapshotParams, response: one } }, async (request) => {
    const workspace = requestWorkspace(request);
    return snapshotView(workspace.name, await findSnapshot(services, workspace, request.params.name));
  });
  app.delete('/v0/snapshots/:name', { schema: { tags, summary: 'Delete a snapshot (its forks keep their files)', params: SnapshotParams, response: one } }, async (request) => {
    const workspace = requestWorkspace(request);
    return snapshotView(workspace.name, await deleteSnapshot(services, workspace, request.params.name));
  });
  app.post('/v0/snapshots/:name/fork', { schema: { tags, summary: 'A new sandbox from a snapshot', params: SnapshotParams, body: ForkInput, response: forked } }, async (request) =>
    forkSandbox(services, requestWorkspace(request), undefined, { ...request.body, snapshotId: request.params.name }, request.principal.clientId),
  );

  app.get('/v0/sandboxes/:name/snapshots', { schema: { tags, summary: "A sandbox's snapshots", params: NameParam, response: { 200: Type.Array(Snapshot), ...commonErrors } } }, async (request) => {
    const workspace = requestWorkspace(request);
    return (await listSnapshots(services, workspace, request.params.name)).map(view(workspace.name));
  });
  app.post(
    '/v0/sandboxes/:name/snapshots',
    { schema: { tags, summary: 'Capture the sandbox into a snapshot (its name generated)', params: NameParam, body: Type.Optional(SnapshotInput), response: one } },
    async (request) => {
      const workspace = requestWorkspace(request);
      // As the reference: the nested endpoint names the capture itself, so it never takes a name a user picked.
      return snapshotView(workspace.name, await captureSnapshot(services, workspace, { source: request.params.name }, request.principal.clientId));
    },
  );
  app.delete('/v0/sandboxes/:name/snapshots/:snapshotId', { schema: { tags, summary: "Delete one of the sandbox's snapshots", params: SandboxSnapshotParams, response: one } }, async (request) => {
    const workspace = requestWorkspace(request);
    const row = await findSnapshot(services, workspace, request.params.snapshotId);
    if (row.source_name !== request.params.name) throw notFound(`snapshot '${request.params.snapshotId}' of sandbox '${request.params.name}' not found`);
    return snapshotView(workspace.name, await deleteSnapshot(services, workspace, row.id));
  });
  app.post(
    '/v0/sandboxes/:name/snapshots/:snapshotId/restore',
    { schema: { tags, summary: 'Put the sandbox back to one of its snapshots (files replaced, processes started afresh)', params: SandboxSnapshotParams, response: { 200: RestoreResult, 409: commonErrors[400], ...commonErrors } } },
    async (request) => restoreSandbox(services, requestWorkspace(request), request.params.name, request.params.snapshotId),
  );
  app.post('/v0/sandboxes/:name/fork', { schema: { tags, summary: 'Fork the sandbox (or one of its snapshots) into a new sandbox', params: NameParam, body: ForkInput, response: forked } }, async (request) =>
    forkSandbox(services, requestWorkspace(request), request.params.name, request.body, request.principal.clientId),
  );
}
