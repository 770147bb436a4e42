import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { HangarConfig } from '../../../domain/config';
import type { ResourceRow } from '../../../store/resources';
import { ResourceStore } from '../../../store/resources';
import { SandboxPreviewStore, type PreviewRow } from '../../../store/sandbox-previews';
import { NameParam, commonErrors } from '../common-schemas';
import { requestWorkspace } from '../workspace-context';
import { Preview, PreviewCreateQuery, PreviewInput, PreviewParams, PreviewToken, PreviewTokenInput, PreviewTokenParams } from './preview-schemas';
import {
  createPreview,
  createPreviewToken,
  deletePreview,
  deletePreviewToken,
  getPreview,
  listPreviewTokens,
  listPreviews,
  previewUrl,
  updatePreview,
  type OpenedToken,
  type PreviewRequest,
  type PreviewServices,
} from './preview-service';

const tags = ['sandboxes'];
const BASE = '/v0/sandboxes/:name/previews';

/** A preview as the reference shows it: its URL in `spec.url`, where the reference SDK's sessions read it (and in `metadata.url`, as other resources have it). */
function previewEnvelope(config: HangarConfig, sandbox: ResourceRow, preview: PreviewRow, status = 'DEPLOYED') {
  const url = previewUrl(config, preview);
  return {
    metadata: {
      url,
      name: preview.name,
      displayName: preview.display_name,
      workspace: sandbox.workspace,
      resourceName: sandbox.name,
      resourceType: 'Sandbox',
      createdAt: preview.created_at.toISOString(),
      updatedAt: preview.updated_at.toISOString(),
      createdBy: preview.created_by,
      updatedBy: preview.updated_by,
    },
    spec: { ...preview.spec, url, region: config.region },
    status,
  };
}

function tokenEnvelope(sandbox: ResourceRow, preview: PreviewRow, token: OpenedToken) {
  return {
    metadata: { name: token.row.name, previewName: preview.name, resourceName: sandbox.name, resourceType: 'Sandbox', workspace: sandbox.workspace },
    spec: { token: token.value, expiresAt: token.row.expires_at.toISOString(), expired: token.row.expires_at.getTime() <= Date.now() },
  };
}

const one = { 200: Preview, ...commonErrors };

/**
 * /v0/sandboxes/{name}/previews and their tokens, as the reference defines them. A preview's URL
 * is served by the preview host (api/gateway/preview-host.ts); tokens are listed with their values,
 * as the reference does (its SDK's sessions read them back from the list).
 */
export default async function previewRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const services: PreviewServices = { resources: new ResourceStore(app.pg), previews: new SandboxPreviewStore(app.pg), secrets: app.secrets, config: app.config };
  const envelope = (sandbox: ResourceRow, preview: PreviewRow, status?: string) => previewEnvelope(app.config, sandbox, preview, status);

  app.get(BASE, { schema: { tags, summary: 'List the previews of a sandbox', params: NameParam, response: { 200: Type.Array(Preview), ...commonErrors } } }, async (request) => {
    const { sandbox, previews } = await listPreviews(services, requestWorkspace(request), request.params.name);
    return previews.map((p) => envelope(sandbox, p));
  });
  app.post(BASE, { schema: { tags, summary: 'Create a preview of a port of the sandbox', params: NameParam, querystring: PreviewCreateQuery, body: PreviewInput, response: { ...one, 409: commonErrors[400] } } }, async (request) => {
    const force = request.query.force === true;
    const { sandbox, preview } = await createPreview(services, requestWorkspace(request), request.params.name, request.body as PreviewRequest, { force, actor: request.principal.clientId });
    return envelope(sandbox, preview);
  });
  app.get(`${BASE}/:preview`, { schema: { tags, summary: 'Get a preview', params: PreviewParams, response: one } }, async (request) => {
    const { sandbox, preview } = await getPreview(services, requestWorkspace(request), request.params.name, request.params.preview);
    return envelope(sandbox, preview);
  });
  app.put(`${BASE}/:preview`, { schema: { tags, summary: 'Replace a preview\'s spec', params: PreviewParams, body: PreviewInput, response: { ...one, 409: commonErrors[400] } } }, async (request) => {
    const { name, preview: previewName } = request.params;
    const { sandbox, preview } = await updatePreview(services, requestWorkspace(request), name, previewName, request.body as PreviewRequest, request.principal.clientId);
    return envelope(sandbox, preview);
  });
  app.delete(`${BASE}/:preview`, { schema: { tags, summary: 'Delete a preview; its URL stops at once', params: PreviewParams, response: one } }, async (request) => {
    const { sandbox, preview } = await deletePreview(services, requestWorkspace(request), request.params.name, request.params.preview);
    return envelope(sandbox, preview, 'DELETED');
  });
  tokenRoutes(app, services);
}

function tokenRoutes(fastify: FastifyInstance, services: PreviewServices) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const TOKENS = `${BASE}/:preview/tokens`;
  app.get(TOKENS, { schema: { tags, summary: 'List the tokens of a private preview, with their values', params: PreviewParams, response: { 200: Type.Array(PreviewToken), ...commonErrors } } }, async (request) => {
    const { sandbox, preview, tokens } = await listPreviewTokens(services, requestWorkspace(request), request.params.name, request.params.preview);
    return tokens.map((t) => tokenEnvelope(sandbox, preview, t));
  });
  app.post(TOKENS, { schema: { tags, summary: 'Create a token for a preview', params: PreviewParams, body: PreviewTokenInput, response: { 200: PreviewToken, 409: commonErrors[400], ...commonErrors } } }, async (request) => {
    const { name, preview: previewName } = request.params;
    const body = { name: request.body.metadata?.name, expiresAt: request.body.spec.expiresAt };
    const { sandbox, preview, token } = await createPreviewToken(services, requestWorkspace(request), name, previewName, body);
    return tokenEnvelope(sandbox, preview, token);
  });
  app.delete(`${TOKENS}/:token`, { schema: { tags, summary: 'Delete a token; it stops working at once', params: PreviewTokenParams, response: { 200: Type.Object({ message: Type.String() }), ...commonErrors } } }, async (request) => {
    const { name, preview, token } = request.params;
    await deletePreviewToken(services, requestWorkspace(request), name, preview, token);
    return { message: `token '${token}' deleted` };
  });
}
