import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { WorkspaceGrant } from '../../../domain/principal';
import { forbidden, notFound } from '../../../domain/errors';
import { NameParam, commonErrors } from '../common-schemas';
import { CallbackSecretStore, type CallbackSecret } from '../../../store/callback-secrets';

const SecretBody = Type.Object({
  workspace: Type.String(),
  secret: Type.String({ description: 'Key of the HMAC-SHA256 signature in X-Service-Signature on callbacks of async agent requests.' }),
  createdAt: Type.String({ format: 'date-time' }),
});

/**
 * The workspace's callback signing secret, for its admins: read it to verify callbacks, rotate it
 * when it may have leaked (callbacks sent from then on, retries included, carry the new one).
 */
export default async function callbackSecretRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const store = new CallbackSecretStore(app.pg, app.secrets);
  const tags = ['workspaces'];

  function adminGrant(request: FastifyRequest, name: string): WorkspaceGrant {
    const grant = request.principal.workspaces.get(name);
    if (!grant) throw notFound(`workspace '${name}' not found`);
    if (grant.role !== 'admin') throw forbidden(`reading the callback secret needs the admin role in workspace '${name}'`);
    return grant;
  }

  const answer = (reply: FastifyReply, workspace: string, current: CallbackSecret) => {
    reply.header('cache-control', 'no-store');
    return { workspace, secret: current.secret, createdAt: current.createdAt.toISOString() };
  };

  app.get(
    '/v0/workspaces/:name/callback-secret',
    { schema: { tags, summary: 'The secret that signs callbacks of async agent requests (workspace admin)', params: NameParam, response: { 200: SecretBody, ...commonErrors } } },
    async (request, reply) => {
      const grant = adminGrant(request, request.params.name);
      return answer(reply, grant.name, await store.current(grant.id));
    },
  );

  app.post(
    '/v0/workspaces/:name/callback-secret/rotate',
    { schema: { tags, summary: 'Replace the callback signing secret with a new one (workspace admin)', params: NameParam, response: { 200: SecretBody, ...commonErrors } } },
    async (request, reply) => {
      const grant = adminGrant(request, request.params.name);
      return answer(reply, grant.name, await store.rotate(grant.id));
    },
  );
}
