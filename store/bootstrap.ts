import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Pool } from 'pg';
import type { HangarConfig } from '../domain/config';
import { newId } from '../domain/ids';
import { createApiKey, createServiceAccount } from './service-accounts';

export interface BootstrapCredentials {
  baseUrl: string;
  runUrl: string;
  accountId: string;
  workspace: string;
  apiKey: string;
}

const BOOTSTRAP_LOCK = 7_460_012;

export function credentialsPath(config: HangarConfig): string {
  return path.join(config.dataDir, 'credentials.json');
}

/**
 * First start: one account, a workspace named `default`, and an account-admin service account
 * with an API key, written to `<dataDir>/credentials.json` (mode 0600). Later starts reuse it;
 * the URLs in the file follow the current configuration.
 */
export async function bootstrap(pool: Pool, config: HangarConfig): Promise<BootstrapCredentials> {
  const file = credentialsPath(config);
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [BOOTSTRAP_LOCK]);
    const existing = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as BootstrapCredentials) : undefined;
    const known = existing && (await client.query('SELECT 1 FROM accounts WHERE id = $1', [existing.accountId])).rowCount;
    let credentials: BootstrapCredentials;
    if (existing && known) {
      credentials = { ...existing, baseUrl: config.baseUrl, runUrl: config.runUrl };
    } else {
      await client.query('BEGIN');
      const accountId = newId('acc');
      await client.query('INSERT INTO accounts (id, name) VALUES ($1, $2)', [accountId, 'default']);
      const workspaceId = newId('ws');
      // A database shared with an earlier install may already hold 'default'; keep names unique.
      const taken = (await client.query('SELECT 1 FROM workspaces WHERE name = $1', ['default'])).rowCount;
      const workspace = taken ? `default-${accountId.slice(4, 10).toLowerCase().replace(/[^a-z0-9]/g, 'x')}` : 'default';
      await client.query('INSERT INTO workspaces (id, account_id, name, display_name) VALUES ($1, $2, $3, $4)', [
        workspaceId,
        accountId,
        workspace,
        'Default workspace',
      ]);
      const admin = await createServiceAccount(client, {
        accountId,
        name: 'bootstrap-admin',
        workspaceId,
        role: 'admin',
        accountAdmin: true,
        createdBy: null,
      });
      const key = await createApiKey(client, admin.id, 'bootstrap', null);
      await client.query('COMMIT');
      credentials = { baseUrl: config.baseUrl, runUrl: config.runUrl, accountId, workspace, apiKey: key.apiKey };
    }
    mkdirSync(config.dataDir, { recursive: true });
    writeFileSync(file, JSON.stringify(credentials, null, 2) + '\n', { mode: 0o600 });
    chmodSync(file, 0o600);
    return credentials;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [BOOTSTRAP_LOCK]).catch(() => undefined);
    client.release();
  }
}
