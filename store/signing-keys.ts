import type { JWK } from 'jose';
import type { Pool } from 'pg';

export interface SigningKeyRow {
  kid: string;
  public_jwk: JWK;
  retired_at: Date | null;
}

/** The JWT signing keys: public halves for verifying, the private half sealed by the master key. */
export class SigningKeyStore {
  constructor(private readonly pg: Pool) {}

  /** The newest key still signing, with its sealed private half. */
  async newest(): Promise<{ kid: string; sealed_private: string } | undefined> {
    const result = await this.pg.query<{ kid: string; sealed_private: string }>(
      'SELECT kid, sealed_private FROM signing_keys WHERE retired_at IS NULL ORDER BY created_at DESC, kid DESC LIMIT 1',
    );
    return result.rows[0];
  }

  async insert(kid: string, alg: string, publicJwk: JWK, sealedPrivate: string): Promise<void> {
    await this.pg.query('INSERT INTO signing_keys (kid, alg, public_jwk, sealed_private) VALUES ($1, $2, $3, $4)', [kid, alg, publicJwk, sealedPrivate]);
  }

  /** Every key, retired ones included: tokens they signed verify until they expire. */
  async all(): Promise<SigningKeyRow[]> {
    return (await this.pg.query<SigningKeyRow>('SELECT kid, public_jwk, retired_at FROM signing_keys')).rows;
  }
}
