import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import type { HangarConfig } from '../../../domain/config';
import { nextExpiry } from '../../../domain/sandbox/expiry';
import { renderSandboxUrl } from '../../../domain/sandbox/url-template';
import type { SandboxSpec } from '../../../domain/sandbox/sandbox';
import { NameParam, commonErrors } from '../common-schemas';
import { toEnvelope } from '../resources/envelope';
import { ResourceStore, type ResourceRow } from '../../../store/resources';
import { WorkspaceImageStore } from '../../../store/workspace-images';
import { requestWorkspace } from '../workspace-context';
import { CreateQuery, SandboxEnvelope, SandboxInput, type SandboxSpecSchema } from './schemas';
import { pullProgressView, type PullProgress } from '../../../domain/images/pull-progress';
import { SANDBOXES, createSandbox, createSandboxIfNotExists, deleteSandbox, findSandbox, updateSandbox, type SandboxServices } from './sandbox-service';

const KIND = SANDBOXES.path;
const tags = ['sandboxes'];

/** A sandbox as the API shows it: its envelope, whether it runs or stands by, and how long it has left. */
function sandboxEnvelope(config: HangarConfig, row: ResourceRow) {
  const spec = row.spec as SandboxSpec;
  const state = (row.state.state as 'RUNNING' | 'STANDBY' | undefined) ?? null;
  const lastUsedAt = (row.state.lastUsedAt as string | undefined) ?? null;
  const expiry = nextExpiry({
    ttl: spec.runtime?.ttl,
    expires: spec.runtime?.expires,
    policies: spec.lifecycle?.expirationPolicies ?? [],
    createdAt: row.created_at.getTime(),
    lastUsedAt: lastUsedAt ? Date.parse(lastUsedAt) : row.created_at.getTime(),
  });
  const url = renderSandboxUrl(config.sandboxUrlTemplate, { sandbox_id: row.name, workspace_id: row.workspace, region: spec.region ?? config.region });
  return {
    ...toEnvelope(row, url),
    state: row.status === 'DEPLOYED' ? state : null,
    lastUsedAt,
    expiresIn: expiry ? Math.max(0, Math.round((expiry.at - Date.now()) / 1000)) : null,
    network: networkTraffic(config, row),
    node: row.node_id ?? null,
    image: imagePull(row),
  };
}

/** Where the pull of its registry image stands, as its node wrote it (activities/image-pull-node.ts). */
function imagePull(row: ResourceRow) {
  type Pull = 'PULLING' | 'PULLED' | 'BUILDING' | 'BUILT' | 'PRESENT' | 'FAILED';
  const image = row.state.image as { reference?: string; pull?: Pull; digest?: string; progress?: PullProgress; message?: string } | undefined;
  if (!image?.reference || !image.pull) return null;
  const pulling = image.pull === 'PULLING';
  const waitMessage = pulling ? (image.message ?? `pulling image '${image.reference}'`) : image.pull === 'BUILDING' ? `building image '${image.reference}' on the node` : null;
  // While it pulls, how far; once PULLED, the pull's last progress (100 %).
  const progress = (pulling || image.pull === 'PULLED') && image.progress ? pullProgressView(image.progress) : null;
  return { reference: image.reference, pull: image.pull, digest: image.digest ?? null, progress, message: waitMessage };
}

/**
 * Bytes the sandbox's egress carried in and out over its life, as the node workers recorded them
 * (every couple of seconds); null for a sandbox without outbound network.
 */
function networkTraffic(config: HangarConfig, row: ResourceRow): { bytesIn: number; bytesOut: number } | null {
  const counted = row.state.network as { bytesIn?: number; bytesOut?: number } | undefined;
  if (counted) return { bytesIn: counted.bytesIn ?? 0, bytesOut: counted.bytesOut ?? 0 };
  return config.sandboxNetwork && (row.spec as SandboxSpec).network?.internet !== false ? { bytesIn: 0, bytesOut: 0 } : null;
}

/**
 * The spec a request gives, as stored: `null` for a ttl or the lifecycle means none (the reference
 * SDK's updateTtl and updateLifecycle clear them so), and a field that is none is left out.
 */
function requestedSpec(spec: Static<typeof SandboxSpecSchema> | undefined): SandboxSpec | undefined {
  if (!spec) return undefined;
  const { lifecycle, runtime, ...rest } = spec;
  const { ttl, ...runtimeRest } = runtime ?? {};
  return {
    ...rest,
    ...(runtime ? { runtime: { ...runtimeRest, ...(ttl === null || ttl === undefined ? {} : { ttl }) } } : {}),
    ...(lifecycle === null || lifecycle === undefined ? {} : { lifecycle }),
  };
}

const createSchema = {
  tags,
  summary: 'Create a sandbox; it is DEPLOYING until its lifecycle workflow has started it',
  querystring: CreateQuery,
  body: SandboxInput,
  response: { 200: SandboxEnvelope, 409: commonErrors[400], ...commonErrors },
};
const updateSchema = {
  tags,
  summary: 'Update labels, display name, ttl and expiration policies',
  params: NameParam,
  body: SandboxInput,
  response: { 200: SandboxEnvelope, ...commonErrors },
};
const deleteSchema = {
  tags,
  summary: 'Delete a sandbox; it is DELETING until its processes and files are gone',
  params: NameParam,
  response: { 200: SandboxEnvelope, ...commonErrors },
};

/**
 * /v0/sandboxes. The rows live in the shared resources table; everything that happens to a
 * sandbox after the request (start, standby, expiry, deletion) is done by its lifecycle workflow,
 * `sandbox/<workspace>/<name>` (sandbox-service.ts).
 */
export default async function sandboxRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const services: SandboxServices = { store: new ResourceStore(app.pg), pg: app.pg, temporal: app.temporal, config: app.config, images: new WorkspaceImageStore(app.pg) };
  const envelope = (row: ResourceRow) => sandboxEnvelope(app.config, row);

  app.get(
    `/v0/${KIND}`,
    { schema: { tags, summary: 'List sandboxes', response: { 200: Type.Array(SandboxEnvelope), ...commonErrors } } },
    async (request) => (await services.store.list(requestWorkspace(request).id, KIND)).map(envelope),
  );
  app.post(`/v0/${KIND}`, { schema: createSchema }, async (request) => {
    const create = request.query.createIfNotExist ? createSandboxIfNotExists : createSandbox;
    return envelope(await create(services, requestWorkspace(request), { metadata: request.body.metadata, spec: requestedSpec(request.body.spec) }, request.principal.clientId));
  });
  app.get(
    `/v0/${KIND}/:name`,
    { schema: { tags, summary: 'Get a sandbox', params: NameParam, response: { 200: SandboxEnvelope, ...commonErrors } } },
    async (request) => envelope(await findSandbox(services, requestWorkspace(request), request.params.name)),
  );
  app.put(`/v0/${KIND}/:name`, { schema: updateSchema }, async (request) =>
    envelope(
      await updateSandbox(
        services,
        requestWorkspace(request),
        request.params.name,
        { metadata: request.body.metadata, spec: requestedSpec(request.body.spec) },
        request.principal.clientId,
      ),
    ),
  );
  app.delete(`/v0/${KIND}/:name`, { schema: deleteSchema }, async (request) =>
    envelope(await deleteSandbox(services, requestWorkspace(request), request.params.name)),
  );
}
