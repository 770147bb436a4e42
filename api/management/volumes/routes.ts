import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { NameParam, commonErrors } from '../common-schemas';
import { toEnvelope } from '../resources/envelope';
import { ResourceStore, type ResourceRow } from '../../../store/resources';
import { requestWorkspace } from '../workspace-context';
import { VolumeEnvelope, VolumeInput } from './schemas';
import { VOLUMES, createVolume, deleteVolume, findVolume, updateVolume, type VolumeServices } from './volume-service';

const KIND = VOLUMES.path;
const tags = ['volumes'];

const createSchema = {
  tags,
  summary: 'Create a volume; it is DEPLOYING until its storage exists',
  body: VolumeInput,
  response: { 200: VolumeEnvelope, 409: commonErrors[400], ...commonErrors },
};
const updateSchema = {
  tags,
  summary: 'Update labels and display name, or grow the volume',
  params: NameParam,
  body: VolumeInput,
  response: { 200: VolumeEnvelope, ...commonErrors },
};
const deleteSchema = {
  tags,
  summary: 'Delete a volume and its files; refused while a sandbox mounts it',
  params: NameParam,
  response: { 200: VolumeEnvelope, 409: commonErrors[400], ...commonErrors },
};

/**
 * /v0/volumes: persistent folders with a size, mounted into sandboxes, that outlive them. The
 * storage is made, metered and removed by the volume's workflow, `volume/<workspace>/<name>` (volume-service.ts).
 */
export default async function volumeRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const services: VolumeServices = { store: new ResourceStore(app.pg), pg: app.pg, temporal: app.temporal, config: app.config };
  const envelope = (row: ResourceRow) => ({ ...toEnvelope(row, `/v0/${KIND}/${row.name}`), node: row.node_id ?? null });

  app.get(
    `/v0/${KIND}`,
    { schema: { tags, summary: 'List volumes', response: { 200: Type.Array(VolumeEnvelope), ...commonErrors } } },
    async (request) => (await services.store.list(requestWorkspace(request).id, KIND)).map(envelope),
  );
  app.post(`/v0/${KIND}`, { schema: createSchema }, async (request) =>
    envelope(await createVolume(services, requestWorkspace(request), request.body, request.principal.clientId)),
  );
  app.get(
    `/v0/${KIND}/:name`,
    { schema: { tags, summary: 'Get a volume', params: NameParam, response: { 200: VolumeEnvelope, ...commonErrors } } },
    async (request) => envelope(await findVolume(services, requestWorkspace(request), request.params.name)),
  );
  app.put(`/v0/${KIND}/:name`, { schema: updateSchema }, async (request) =>
    envelope(await updateVolume(services, requestWorkspace(request), request.params.name, request.body, request.principal.clientId)),
  );
  app.delete(`/v0/${KIND}/:name`, { schema: deleteSchema }, async (request) => envelope(await deleteVolume(services, requestWorkspace(request), request.params.name)));
}
