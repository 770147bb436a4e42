import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { randomBytes } from 'node:crypto';
import type { Pool } from 'pg';
import { buildApp } from '../../api/app';
import type { AppOptions } from '../../api/fastify';
import { createApiKey, createServiceAccount } from '../../store/service-accounts';
import type { HangarConfig } from '../../domain/config';
import { newId } from '../../domain/ids';
import type { WorkspaceRole } from '../../domain/principal';
import { testStack } from '../setup/stack';

/** The platform configuration tests use: the test stack's services and data folder. */
export function testConfig(overrides: Partial<HangarConfig> = {}): HangarConfig {
  const stack = testStack();
  return {
    ...stack.config,
    databaseUrl: stack.databaseUrl,
    clickhouseUrl: stack.clickhouseUrl,
    clickhouseDatabase: stack.clickhouseDatabase,
    temporalAddress: stack.temporalAddress,
    ...overrides,
  };
}

/** A short random suffix so that every test gets names nobody else uses (workspace names are global). */
export function unique(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

export interface TestIdentity {
  id: string;
  clientId: string;
  clientSecret: string;
  apiKey: string;
}

export interface TestTenant {
  accountId: string;
  workspace: string;
  workspaceId: string;
  /** Account admin of the tenant's account. */
  admin: TestIdentity;
}

/** A fresh account with one workspace and an account-admin identity, created directly in PostgreSQL. */
export async function createTenant(pg: Pool, label = 'tenant'): Promise<TestTenant> {
  const accountId = newId('acc');
  const workspaceId = newId('ws');
  const workspace = unique(label);
  await pg.query('INSERT INTO accounts (id, name) VALUES ($1, $2)', [accountId, label]);
  await pg.query('INSERT INTO workspaces (id, account_id, name, display_name) VALUES ($1, $2, $3, $3)', [workspaceId, accountId, workspace]);
  const admin = await addIdentity(pg, { accountId, workspaceId, role: 'admin', accountAdmin: true, name: 'admin' });
  return { accountId, workspace, workspaceId, admin };
}

export async function addIdentity(
  pg: Pool,
  input: { accountId: string; workspaceId: string; role: WorkspaceRole; accountAdmin?: boolean; name?: string },
): Promise<TestIdentity> {
  const sa = await createServiceAccount(pg, {
    accountId: input.accountId,
    workspaceId: input.workspaceId,
    role: input.role,
    accountAdmin: input.accountAdmin ?? false,
    name: input.name ?? `${input.role}-identity`,
    createdBy: null,
  });
  const key = await createApiKey(pg, sa.id, 'test', null);
  return { id: sa.id, clientId: sa.clientId, clientSecret: sa.clientSecret, apiKey: key.apiKey };
}

export interface TestApp {
  app: FastifyInstance;
  config: HangarConfig;
  /** app.inject with a bearer credential and, optionally, a workspace header. */
  call(credential: string | undefined, options: InjectOptions & { workspace?: string }): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export async function startTestApp(overrides: Partial<HangarConfig> = {}, options: AppOptions = {}): Promise<TestApp> {
  const config = testConfig(overrides);
  const app = await buildApp(config, options);
  await app.ready();
  return {
    app,
    config,
    call: (credential, { workspace, headers, ...rest }) =>
      app.inject({
        ...rest,
        headers: {
          ...(credential ? { authorization: `Bearer ${credential}` } : {}),
          ...(workspace ? { 'x-service-workspace': workspace } : {}),
          ...headers,
        },
      }),
    close: () => app.close(),
  };
}
