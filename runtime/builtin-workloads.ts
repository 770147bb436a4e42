import { ApplicationFailure } from '@temporalio/activity';
import fs from 'node:fs';
import path from 'node:path';
import { Pool } from 'pg';
import { ConnectionStore } from '../store/connections';
import { survivingConnectionLoss } from '../store/postgres-pool';
import type { HangarConfig } from '../domain/config';
import { findIntegration } from '../domain/integrations/catalog';
import { boundConnections } from '../domain/integrations/function-binding';
import { loadMasterKey } from '../store/master-key';
import { SecretBox } from '../domain/secret-box';
import { providerEgress, type PlatformEgress } from './platform-services/egress';
import type { WorkloadKey, WorkloadSpec } from '../domain/workloads/workload';

/** A workload whose code ships with the platform: an integration's MCP server. */
export interface BuiltinWorkload {
  /** Host folder bound at /app: the platform's compiled code. */
  appDir: string;
  command: string[];
  /** The connection's secrets and the provider's endpoints; resolved on the node, never put in workflow history. */
  environment: Record<string, string>;
  /** Where the server may reach through the platform socket: its provider's endpoints. */
  egress: PlatformEgress;
}

/** The compiled platform (dist/), found from the sources and from dist alike. */
function distDir(): string {
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return path.join(dir, 'dist');
  }
  throw new Error(`no package.json above ${__dirname}`);
}

/**
 * Resolves built-in workloads on the node: a function bound to an integration connection runs
 * that integration's MCP server from dist/, with the connection's secrets opened here (the node
 * reads PostgreSQL and holds the master key), so they go from the database into the process
 * environment and nowhere else.
 */
export class BuiltinWorkloads {
  private pool?: Pool;

  constructor(private readonly config: HangarConfig) {}

  async resolve(key: WorkloadKey, spec: WorkloadSpec): Promise<BuiltinWorkload> {
    const [connectionName] = boundConnections(spec);
    if (key.kind !== 'functions' || !connectionName) throw ApplicationFailure.nonRetryable('no code bundle: upload one with PUT .../code', 'WorkloadDeployError');
    if (!this.pool) {
      this.pool = survivingConnectionLoss(new Pool({ connectionString: this.config.databaseUrl, max: 2, allowExitOnIdle: true }));
    }
    const store = new ConnectionStore(this.pool, new SecretBox(loadMasterKey(this.config)));
    const row = await store.get(key.workspaceId, connectionName);
    if (!row) throw ApplicationFailure.nonRetryable(`integration connection '${connectionName}' does not exist`, 'WorkloadDeployError');
    const integration = findIntegration(row.integration);
    if (!integration) throw ApplicationFailure.nonRetryable(`integration '${row.integration}' is not known to this platform`, 'WorkloadDeployError');
    const { mcp } = integration;
    if (!mcp) throw ApplicationFailure.nonRetryable(`integration '${row.integration}' has no MCP server to run`, 'WorkloadDeployError');
    const appDir = distDir();
    const entry = `${mcp.entry}.js`;
    if (!fs.existsSync(path.join(appDir, entry))) throw new Error(`the platform build lacks ${entry}: run npm run build`);
    return {
      appDir,
      command: ['node', entry],
      environment: mcp.environment(await store.openSecrets(row), this.config),
      egress: providerEgress(mcp.egress(this.config)),
    };
  }

  async close(): Promise<void> {
    await this.pool?.end();
  }
}
