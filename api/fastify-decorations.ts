import type { ClickHouseClient } from '@clickhouse/client';
import type { Client as TemporalClient } from '@temporalio/client';
import type { Pool } from 'pg';
import type { HangarConfig } from '../domain/config';
import type { Principal } from '../domain/principal';
import type { SecretBox } from '../domain/secret-box';
import type { Authenticator } from './auth/authenticator';
import type { TokenService } from './auth/tokens';

// What the infrastructure plugins put on every Fastify instance and request.
declare module 'fastify' {
  interface FastifyInstance {
    config: HangarConfig;
    pg: Pool;
    clickhouse: ClickHouseClient;
    temporal: TemporalClient;
    secrets: SecretBox;
    tokens: TokenService;
    authenticator: Authenticator;
  }
  interface FastifyRequest {
    /** Set by the auth plugin on every route that is not public. */
    principal: Principal;
    /** The API version serving this request (Service-Version, or the default). */
    apiVersion: string;
  }
  interface FastifyContextConfig {
    /** No credential needed (health, token endpoint, discovery, docs). */
    public?: boolean;
    /** Not subject to Service-Version (health, docs, discovery). */
    unversioned?: boolean;
  }
}

export {};
