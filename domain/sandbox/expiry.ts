import { parseDurationSeconds } from '../duration';

export type ExpirationPolicyType = 'ttl-idle' | 'ttl-max-age' | 'date';

export interface ExpirationPolicy {
  type: ExpirationPolicyType;
  value: string;
  action: 'delete';
}

export interface ExpiryInputs {
  /** spec.runtime.ttl: a maximum age such as "24h". */
  ttl?: string;
  /** spec.runtime.expires: an absolute expiry (RFC 3339). */
  expires?: string;
  policies: ExpirationPolicy[];
  createdAt: number;
  lastUsedAt: number;
}

export interface Expiry {
  at: number;
  reason: string;
}

/** Explains why a policy cannot be applied, naming its field, or undefined when it is valid. */
export function expirationPolicyProblem(policy: ExpirationPolicy, field: string): string | undefined {
  if (policy.type === 'date') {
    return Number.isNaN(Date.parse(policy.value)) ? `${field}.value must be an RFC 3339 date for type 'date'` : undefined;
  }
  return parseDurationSeconds(policy.value) === undefined
    ? `${field}.value must be a duration such as "30m", "24h" or "7d" for type '${policy.type}'`
    : undefined;
}

/** The earliest moment one of the sandbox's rules deletes it, or undefined when none applies. */
export function nextExpiry({ ttl, expires, policies, createdAt, lastUsedAt }: ExpiryInputs): Expiry | undefined {
  const candidates: Expiry[] = [];
  const ttlSeconds = ttl === undefined ? undefined : parseDurationSeconds(ttl);
  if (ttlSeconds !== undefined) candidates.push({ at: createdAt + ttlSeconds * 1000, reason: `ttl ${ttl} reached` });
  const expiresAt = expires === undefined ? NaN : Date.parse(expires);
  if (!Number.isNaN(expiresAt)) candidates.push({ at: expiresAt, reason: `expiry ${expires} reached` });
  for (const policy of policies) {
    if (policy.type === 'date') {
      const at = Date.parse(policy.value);
      if (!Number.isNaN(at)) candidates.push({ at, reason: `expiration date ${policy.value} reached` });
      continue;
    }
    const seconds = parseDurationSeconds(policy.value);
    if (seconds === undefined) continue;
    candidates.push(
      policy.type === 'ttl-idle'
        ? { at: lastUsedAt + seconds * 1000, reason: `idle for ${policy.value}` }
        : { at: createdAt + seconds * 1000, reason: `max age ${policy.value} reached` },
    );
  }
  return candidates.sort((a, b) => a.at - b.at)[0];
}
