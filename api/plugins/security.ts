import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { loadMasterKey } from '../../store/master-key';
import { SecretBox } from '../../domain/secret-box';
import { Authenticator } from '../auth/authenticator';
import { TokenService } from '../auth/tokens';

/** Secret sealing, token issuing and credential checking, built once per process. */
export default fp(async function security(app: FastifyInstance) {
  const secrets = new SecretBox(loadMasterKey(app.config));
  const tokens = new TokenService(app.pg, secrets, app.config.baseUrl, app.config.tokenTtlSeconds);
  app.decorate('secrets', secrets);
  app.decorate('tokens', tokens);
  app.decorate('authenticator', new Authenticator(app.pg, tokens));
});
