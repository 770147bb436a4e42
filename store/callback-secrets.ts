import type { Pool } from 'pg';
import { newCallbackSecret } from '../domain/callback-signature';
import type { SecretBox } from '../domain/secret-box';

export interface CallbackSecret {
  secret: string;
  createdAt: Date;
}

/**
 * One callback signing secret per workspace, sealed at rest and bound to its workspace (a sealed
 * value copied to another workspace's row does not open). It exists from the first time someone
 * needs it, an admin reading it or a callback being signed; rotation replaces it at once.
 */
export class CallbackSecretStore {
  constructor(private readonly pg: Pool, private readonly box: SecretBox) {}

  async current(workspaceId: string): Promise<CallbackSecret> {
    // Two first users at once: one insert wins, both read the winner.
    await this.pg.query(
      'INSERT INTO workspace_callback_secrets (workspace_id, sealed_secret) VALUES ($1, $2) ON CONFLICT (workspace_id) DO NOTHING',
      [workspaceId, this.box.seal(newCallbackSecret(), workspaceId)],
    );
    const { rows } = await this.pg.query<{ sealed_secret: string; created_at: Date }>(
      'SELECT sealed_secret, created_at FROM workspace_callback_secrets WHERE workspace_id = $1',
      [workspaceId],
    );
    return { secret: this.box.open(rows[0].sealed_secret, workspaceId), createdAt: rows[0].created_at };
  }

  async rotate(workspaceId: string): Promise<CallbackSecret> {
    const secret = newCallbackSecret();
    const { rows } = await this.pg.query<{ created_at: Date }>(
      `INSERT INTO workspace_callback_secrets (workspace_id, sealed_secret) VALUES ($1, $2)
       ON CONFLICT (workspace_id) DO UPDATE SET sealed_secret = EXCLUDED.sealed_secret, created_at = now() RETURNING created_at`,
      [workspaceId, this.box.seal(secret, workspaceId)],
    );
    return { secret, createdAt: rows[0].created_at };
  }
}
