import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { DEFAULT_BUNDLE_LIMIT_BYTES } from '../../../domain/workloads/bundles';
import { PROVIDER_MODEL_TYPE, isProviderModel } from '../../../domain/workloads/provider-model';
import { WORKLOAD_KINDS, type WorkloadKind } from '../../../domain/workloads/workload';
import { badRequest, notFound } from '../../../domain/errors';
import { NameParam, commonErrors } from '../common-schemas';
import { ResourceStore } from '../../../store/resources';
import { requestWorkspace } from '../workspace-context';
import { storeBundle } from './bundle-upload';
import { requestDeployment } from '../../../control-plane/deployments';
import { RevisionStore } from '../../../store/revisions';

const BUNDLE_TYPES = ['application/gzip', 'application/x-gzip', 'application/octet-stream', 'application/x-tar'];

const RevisionAccepted = Type.Object({
  metadata: Type.Object({ name: Type.String(), workspace: Type.String() }),
  revision: Type.Integer(),
  bundle: Type.Object({ sha256: Type.String(), bytes: Type.Integer() }),
  status: Type.String(),
});

const Revision = Type.Object({
  revision: Type.Integer(),
  bundleSha256: Type.Union([Type.String(), Type.Null()]),
  bundleBytes: Type.Union([Type.Integer(), Type.Null()]),
  status: Type.String(),
  message: Type.String(),
  createdAt: Type.String(),
});

function bundleLimitBytes(): number {
  const value = Number(process.env.HANGAR_BUNDLE_LIMIT_BYTES);
  return Number.isInteger(value) && value > 0 ? value : DEFAULT_BUNDLE_LIMIT_BYTES;
}

/**
 * Code for workloads: `PUT /v0/{kind}/{name}/code` streams a tar.gz bundle to disk (never into
 * memory), records it as the next revision and hands it to the deployment workflow;
 * `GET /v0/{kind}/{name}/revisions` lists what was uploaded and what became of it.
 */
export default async function workloadRoutes(fastify: FastifyInstance, options: { bundleLimitBytes?: number } = {}) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const resources = new ResourceStore(app.pg);
  const revisions = new RevisionStore(app.pg);
  const limit = options.bundleLimitBytes ?? bundleLimitBytes();
  // The body is the raw archive: parsed by nobody, streamed by the handler.
  app.addContentTypeParser(BUNDLE_TYPES, { bodyLimit: Number.MAX_SAFE_INTEGER }, (_request, _payload, done) => done(null));

  async function findWorkload(request: Parameters<typeof requestWorkspace>[0], kind: WorkloadKind, name: string) {
    const workspace = requestWorkspace(request);
    const row = await resources.get({ workspaceId: workspace.id, kind, name });
    if (!row) throw notFound(`${kind.replace(/s$/, '')} '${name}' not found in workspace '${workspace.name}'`);
    return { workspace, row };
  }

  for (const kind of WORKLOAD_KINDS) {
    const tags = [kind];
    app.put(
      `/v0/${kind}/:name/code`,
      {
        schema: {
          tags,
          summary: `Upload the code of a ${kind.replace(/s$/, '')} (tar.gz) and deploy it`,
          params: NameParam,
          response: { 202: RevisionAccepted, ...commonErrors },
        },
      },
      async (request, reply) => {
        const { workspace, row } = await findWorkload(request, kind, request.params.name);
        if (kind === 'models' && isProviderModel(row.spec)) {
          throw badRequest(`model '${row.name}' is a provider model (spec.runtime.type '${PROVIDER_MODEL_TYPE}'): it has no code to upload`);
        }
        const bundle = await storeBundle(app.config.dataDir, request.raw, limit);
        // The spec as it is when the revision is numbered, not as read before the upload streamed.
        const revision = await revisions.create({ resourceId: row.id, bundleSha256: bundle.sha256, bundleBytes: bundle.bytes, actor: request.principal.clientId });
        await resources.transition(row.id, 'UPLOADING', { type: 'Normal', message: `revision ${revision}: code bundle received (${bundle.bytes} bytes, sha256 ${bundle.sha256.slice(0, 12)})` });
        await requestDeployment(app.temporal, app.config, { id: row.id, workspace: workspace.name, workspaceId: workspace.id, kind, name: row.name }, revision);
        reply.code(202);
        return { metadata: { name: row.name, workspace: workspace.name }, revision, bundle, status: 'UPLOADING' };
      },
    );

    app.get(
      `/v0/${kind}/:name/revisions`,
      { schema: { tags, summary: `List the revisions of a ${kind.replace(/s$/, '')}`, params: NameParam, response: { 200: Type.Array(Revision), ...commonErrors } } },
      async (request) => {
        const { row } = await findWorkload(request, kind, request.params.name);
        return revisions.list(row.id);
      },
    );
  }
}
