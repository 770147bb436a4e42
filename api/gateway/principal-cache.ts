import { hash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Principal } from '../../domain/principal';

/** A verified credential is trusted this long before it is checked again (revocation takes effect within it). */
const PRINCIPAL_TTL_MS = 2_000;
const MAX_ENTRIES = 10_000;

/**
 * Gateway requests (inference, sandbox API calls) repeat the same credential at high rates;
 * checking it costs a database query each time. The gateways remember a verified principal for a short while, keyed by a
 * digest of the credential (the credential itself is not kept). Failures are not cached.
 */
export class PrincipalCache {
  private readonly entries = new Map<string, { principal: Principal; at: number }>();

  constructor(private readonly authenticate: (headers: IncomingHttpHeaders) => Promise<Principal>) {}

  async principal(headers: IncomingHttpHeaders): Promise<Principal> {
    const credential = headers['x-service-authorization'] ?? headers.authorization;
    if (typeof credential !== 'string') return this.authenticate(headers);
    // One-shot digest: no Hash object per request.
    const key = hash('sha256', credential, 'base64');
    const cached = this.entries.get(key);
    if (cached && Date.now() - cached.at < PRINCIPAL_TTL_MS) return cached.principal;
    const principal = await this.authenticate(headers);
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(key, { principal, at: Date.now() });
    return principal;
  }
}
