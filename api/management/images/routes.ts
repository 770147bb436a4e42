import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { conflict } from '../../../domain/errors';
import { DEFAULT_BUILD_CONTEXT_LIMIT_BYTES } from '../../../domain/images/build-context';
import { availableImages } from '../../../runtime/image';
import { WorkspaceImageStore, type WorkspaceImageRow } from '../../../store/workspace-images';
import { NodeImageStore } from '../../../store/node-images';
import { BUILT_BASE_IMAGE } from '../../../domain/images/builtin';
import { commonErrors } from '../common-schemas';
import { tagView } from './tag-view';
import { requestWorkspace } from '../workspace-context';
import { storeBuildContext } from './context-upload';
import { RegistryImageStore } from '../../../store/registry-images';
import { deleteRegistryImage, findRegistryImage, isRegistryImageName, registryImageViews, registryReferenceOf } from './registry-images';
import { checkImageName, deleteImageTags, findImageTag, findImageTags, isBuiltinName, startImageBuild, type ImageServices } from './image-service';
import { BuildQuery, Image, ImageParams, ImageTag, ImageTagParams } from './schemas';

const tags = ['images'];
const CONTEXT_TYPES = ['application/gzip', 'application/x-gzip', 'application/x-tar', 'application/octet-stream'];

function contextLimitBytes(): number {
  const value = Number(process.env.HANGAR_BUILD_CONTEXT_LIMIT_BYTES);
  return Number.isInteger(value) && value > 0 ? value : DEFAULT_BUILD_CONTEXT_LIMIT_BYTES;
}

/** A workspace image's tag on the API. */
function workspaceTagView(row: WorkspaceImageRow) {
  return tagView(row.tag, `${row.name}:${row.tag}`, row);
}

/**
 * A built-in image: one tag, nothing stored for the workspace. `base` (the host's folders) is
 * always READY and stores nothing; `base-image` shows what the nodes built (store/node-images.ts):
 * its digest and size once a node stores it, BUILDING while the first build runs, READY with no
 * size before any node needed it (the first sandbox on it has it built).
 */
async function builtinView(nodeImages: NodeImageStore, workspace: string, name: string) {
  const stored = name === BUILT_BASE_IMAGE ? await nodeImages.list(name) : [];
  const ready = stored.find((row) => row.state === 'READY');
  const state = !ready && stored.some((row) => row.state === 'BUILDING') ? ('BUILDING' as const) : ('READY' as const);
  const sizeBytes = name === BUILT_BASE_IMAGE ? (ready?.size_bytes === undefined || ready.size_bytes === null ? null : Number(ready.size_bytes)) : 0;
  const updatedAt = stored[0]?.updated_at.toISOString() ?? null;
  const tag = { name: 'latest', reference: name, state, reason: null, digest: ready?.digest ?? null, sizeBytes, progress: null, events: [], createdAt: null, updatedAt };
  return { metadata: { name, workspace, builtIn: true }, spec: { tags: [tag] } };
}

function imageView(workspace: string, name: string, rows: WorkspaceImageRow[]) {
  return { metadata: { name, workspace, builtIn: false }, spec: { tags: rows.map(workspaceTagView) } };
}

/**
 * Images: `/v0/images` lists the built-in images (read-only) and the workspace's own, each with
 * its tags; `PUT /v0/images/{name}/build?tag=` uploads a build context (tar.gz with a Dockerfile)
 * and starts its build; tags are read and deleted one by one or with their image. Each build and
 * each removal is a workflow `image/<workspace>/<name>:<tag>/...` (image-service.ts).
 */
export default async function imageRoutes(fastify: FastifyInstance, options: { contextLimitBytes?: number } = {}) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const services: ImageServices = { images: new WorkspaceImageStore(app.pg), temporal: app.temporal, config: app.config };
  const nodeImages = new NodeImageStore(app.pg);
  const pulled = new RegistryImageStore(app.pg);
  const limit = options.contextLimitBytes ?? contextLimitBytes();
  // The body is the raw archive: parsed by nobody, streamed to disk by the handler.
  app.addContentTypeParser(CONTEXT_TYPES, { bodyLimit: Number.MAX_SAFE_INTEGER }, (_request, _payload, done) => done(null));
  const one = { 200: Image, 409: commonErrors[400], ...commonErrors };

  app.get('/v0/images', { schema: { tags, summary: "The built-in images, the workspace's own and those of registries it pulled, with their tags", response: { 200: Type.Array(Image), ...commonErrors } } }, async (request) => {
    const workspace = requestWorkspace(request);
    const byName = new Map<string, WorkspaceImageRow[]>();
    for (const row of await services.images.list(workspace.id)) byName.set(row.name, [...(byName.get(row.name) ?? []), row]);
    const builtins = await Promise.all(availableImages().map((name) => builtinView(nodeImages, workspace.name, name)));
    return [
      ...builtins,
      ...[...byName].map(([name, rows]) => imageView(workspace.name, name, rows)),
      ...registryImageViews(workspace.name, await pulled.list(workspace.id)),
    ];
  });
  app.get('/v0/images/:name', { schema: { tags, summary: 'An image and its tags', params: ImageParams, response: one } }, async (request) => {
    const workspace = requestWorkspace(request);
    if (isBuiltinName(request.params.name)) return builtinView(nodeImages, workspace.name, request.params.name);
    return imageView(workspace.name, request.params.name, await findImageTags(services, workspace, request.params.name));
  });
  app.get('/v0/images/:name/tags', { schema: { tags, summary: "An image's tags", params: ImageParams, response: { 200: Type.Array(ImageTag), ...commonErrors } } }, async (request) => {
    const workspace = requestWorkspace(request);
    if (isBuiltinName(request.params.name)) return (await builtinView(nodeImages, workspace.name, request.params.name)).spec.tags;
    return (await findImageTags(services, workspace, request.params.name)).map(workspaceTagView);
  });
  app.get('/v0/images/:name/tags/:tag', { schema: { tags, summary: 'One tag: its state, digest, size, progress and events', params: ImageTagParams, response: { 200: ImageTag, ...commonErrors } } }, async (request) => {
    const workspace = requestWorkspace(request);
    if (isBuiltinName(request.params.name)) return (await builtinView(nodeImages, workspace.name, request.params.name)).spec.tags[0];
    if (isRegistryImageName(request.params.name)) {
      return registryImageViews(workspace.name, await findRegistryImage(pulled, workspace, registryReferenceOf(request.params.name, request.params.tag)))[0].spec.tags[0];
    }
    return workspaceTagView(await findImageTag(services, workspace, checkImageName(request.params.name, request.params.tag)));
  });
  app.delete('/v0/images/:name', { schema: { tags, summary: 'Delete an image, every tag (409 while one is used)', params: ImageParams, response: one } }, async (request) => {
    const workspace = requestWorkspace(request);
    if (isBuiltinName(request.params.name)) throw conflict(`image '${request.params.name}' is built in: it is read-only`);
    if (isRegistryImageName(request.params.name)) return registryImageViews(workspace.name, await deleteRegistryImage(pulled, workspace, registryReferenceOf(request.params.name)))[0];
    const rows = await findImageTags(services, workspace, request.params.name);
    await deleteImageTags(services, workspace, rows);
    return imageView(workspace.name, request.params.name, rows);
  });
  app.delete('/v0/images/:name/tags/:tag', { schema: { tags, summary: 'Delete one tag (409 while it is used)', params: ImageTagParams, response: { 200: ImageTag, 409: commonErrors[400], ...commonErrors } } }, async (request) => {
    const workspace = requestWorkspace(request);
    if (isBuiltinName(request.params.name)) throw conflict(`image '${request.params.name}' is built in: it is read-only`);
    if (isRegistryImageName(request.params.name)) {
      const rows = await deleteRegistryImage(pulled, workspace, registryReferenceOf(request.params.name, request.params.tag));
      return registryImageViews(workspace.name, rows)[0].spec.tags[0];
    }
    const row = await findImageTag(services, workspace, checkImageName(request.params.name, request.params.tag));
    await deleteImageTags(services, workspace, [row]);
    return workspaceTagView(row);
  });
  app.put(
    '/v0/images/:name/build',
    { schema: { tags, summary: 'Upload a build context (tar.gz with a Dockerfile) and build the image from it', params: ImageParams, querystring: BuildQuery, response: { 202: ImageTag, 409: commonErrors[400], 413: commonErrors[400], ...commonErrors } } },
    async (request, reply) => {
      const workspace = requestWorkspace(request);
      const image = checkImageName(request.params.name, request.query.tag ?? 'latest', 'querystring.tag');
      if (isBuiltinName(image.name)) throw conflict(`image '${image.name}' is built in: it is read-only`);
      const context = await storeBuildContext(app.config.dataDir, request.raw, limit);
      const row = await startImageBuild(services, workspace, image, context, request.principal.clientId);
      reply.code(202);
      return workspaceTagView(row);
    },
  );
}
