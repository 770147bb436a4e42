import { SignJWT, exportJWK, generateKeyPair, importJWK, jwtVerify, type JWK, type JWTPayload } from 'jose';
import type { Pool } from 'pg';
import { newId } from '../../domain/ids';
import type { SecretBox } from '../../domain/secret-box';
import { SigningKeyStore } from '../../store/signing-keys';

const ALG = 'ES256';
export const TOKEN_AUDIENCE = 'hangar-api';
/** Unknown key ids trigger at most one key reload per this interval, so forged kids cost nothing. */
const RELOAD_INTERVAL_MS = 5_000;

type VerifyKey = Awaited<ReturnType<typeof importJWK>>;

interface KeyRecord {
  kid: string;
  publicJwk: JWK;
  retired: boolean;
  verifyKey: VerifyKey;
}

export interface AccessTokenClaims extends JWTPayload {
  sub: string;
  client_id: string;
  account_id: string;
}

/**
 * Issues and checks the platform's short-lived access tokens. Keys live in PostgreSQL (private
 * halves sealed), so every API node signs with the same active key and verifies any published
 * one; `rotate()` adds a new active key while older ones keep verifying until retired.
 */
export class TokenService {
  private keys = new Map<string, KeyRecord>();
  private signing?: { kid: string; key: VerifyKey };
  private lastReload = 0;
  private reloading?: Promise<void>;
  private readonly store: SigningKeyStore;

  constructor(
    pg: Pool,
    private readonly box: SecretBox,
    readonly issuer: string,
    readonly ttlSeconds: number,
    readonly audience: string = TOKEN_AUDIENCE,
  ) {
    this.store = new SigningKeyStore(pg);
  }

  /** A token for the service account; `maxSeconds` shortens it (a token never outlives the API key it was exchanged for). */
  async issue(claims: { sub: string; clientId: string; accountId: string }, maxSeconds?: number): Promise<{ token: string; expiresIn: number }> {
    const expiresIn = maxSeconds === undefined ? this.ttlSeconds : Math.min(this.ttlSeconds, maxSeconds);
    const signing = await this.signingKey();
    const token = await new SignJWT({ client_id: claims.clientId, account_id: claims.accountId })
      .setProtectedHeader({ alg: ALG, kid: signing.kid, typ: 'at+jwt' })
      .setSubject(claims.sub)
      .setIssuer(this.issuer)
      .setAudience(this.audience)
      .setIssuedAt()
      .setJti(newId('key').slice(4))
      .setExpirationTime(`${expiresIn}s`)
      .sign(signing.key);
    return { token, expiresIn };
  }

  /** Verifies signature, algorithm, issuer, audience and expiry; throws on any failure. */
  async verify(token: string): Promise<AccessTokenClaims> {
    const { payload } = await jwtVerify(token, (header) => this.verifyKeyFor(header.kid), {
      algorithms: [ALG],
      issuer: this.issuer,
      audience: this.audience,
      requiredClaims: ['sub', 'exp', 'iat'],
    });
    if (typeof payload.client_id !== 'string' || typeof payload.account_id !== 'string') {
      throw new Error('token lacks client_id or account_id');
    }
    return payload as AccessTokenClaims;
  }

  async jwks(): Promise<{ keys: JWK[] }> {
    await this.reload();
    return { keys: [...this.keys.values()].filter((k) => !k.retired).map((k) => k.publicJwk) };
  }

  /** Creates a new active signing key; existing keys stay published for tokens already issued. */
  async rotate(): Promise<string> {
    const kid = await this.createKey();
    this.signing = undefined;
    await this.reload();
    return kid;
  }

  private async verifyKeyFor(kid: string | undefined): Promise<VerifyKey> {
    if (!kid) throw new Error('token has no kid');
    let record = this.keys.get(kid);
    if (!record && (this.reloading || Date.now() - this.lastReload > RELOAD_INTERVAL_MS)) {
      await this.reload();
      record = this.keys.get(kid);
    }
    if (!record || record.retired) throw new Error('unknown signing key');
    return record.verifyKey;
  }

  private async signingKey(): Promise<{ kid: string; key: VerifyKey }> {
    if (this.signing) return this.signing;
    let row = await this.newestKeyRow();
    if (!row) {
      await this.createKey();
      row = await this.newestKeyRow();
    }
    if (!row) throw new Error('no signing key available');
    const privateJwk = JSON.parse(this.box.open(row.sealed_private, row.kid)) as JWK;
    this.signing = { kid: row.kid, key: await importJWK(privateJwk, ALG) };
    return this.signing;
  }

  private async newestKeyRow(): Promise<{ kid: string; sealed_private: string } | undefined> {
    return this.store.newest();
  }

  private async createKey(): Promise<string> {
    const kid = newId('kid');
    const { publicKey, privateKey } = await generateKeyPair(ALG, { extractable: true });
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: ALG, use: 'sig' };
    const sealed = this.box.seal(JSON.stringify(await exportJWK(privateKey)), kid);
    // Two nodes starting together may both create a key; the newest wins and both stay valid.
    await this.store.insert(kid, ALG, publicJwk, sealed);
    return kid;
  }

  /** Concurrent callers share one reload, so none of them sees the key set before it is loaded. */
  private reload(): Promise<void> {
    this.reloading ??= this.loadKeys().finally(() => {
      this.reloading = undefined;
    });
    return this.reloading;
  }

  private async loadKeys(): Promise<void> {
    this.lastReload = Date.now();
    const rows = await this.store.all();
    const next = new Map<string, KeyRecord>();
    for (const row of rows) {
      const existing = this.keys.get(row.kid);
      next.set(row.kid, {
        kid: row.kid,
        publicJwk: row.public_jwk,
        retired: row.retired_at !== null,
        verifyKey: existing?.verifyKey ?? (await importJWK(row.public_jwk, ALG)),
      });
    }
    this.keys = next;
  }
}
