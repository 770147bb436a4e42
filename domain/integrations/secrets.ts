import type { IntegrationDefinition } from './catalog';

/** Values at least this long show their last four characters when masked; shorter ones show none. */
const REVEAL_TAIL_FROM = 16;
const MASK = '********';

/**
 * The form a secret takes in every response: never the value, only enough of its end for a person
 * to tell two credentials apart.
 */
export function maskSecret(value: string): string {
  return value.length >= REVEAL_TAIL_FROM ? `${MASK}${value.slice(-4)}` : MASK;
}

export function maskSecrets(secrets: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(secrets).map(([key, value]) => [key, maskSecret(value)]));
}

/**
 * Explains what is wrong with a connection's secrets for its integration, naming the key, or
 * returns undefined when they are complete and every key is one the integration knows.
 */
export function secretsProblem(integration: IntegrationDefinition, secrets: Record<string, string>): string | undefined {
  for (const secret of integration.secrets) {
    if (secret.required && !secrets[secret.name]) {
      return `spec.secret.${secret.name} is required for integration '${integration.name}'`;
    }
  }
  const known = new Set(integration.secrets.map((secret) => secret.name));
  const unknown = Object.keys(secrets).find((key) => !known.has(key));
  if (unknown !== undefined) {
    return `spec.secret.${unknown} is not a secret of integration '${integration.name}' (known: ${[...known].join(', ')})`;
  }
  return undefined;
}

/**
 * The secrets after an update. A client that read a connection and sends it back carries masked
 * values: a value equal to the current mask keeps the stored secret instead of replacing it.
 * Keys left out are removed, as a PUT replaces the whole map.
 */
export function mergeSecretUpdate(current: Record<string, string>, update: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(update).map(([key, value]) => {
      const stored = current[key];
      return [key, stored !== undefined && value === maskSecret(stored) ? stored : value];
    }),
  );
}

/** Whether two secret maps hold the same keys with the same values. */
export function sameSecrets(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && a[key] === b[key]);
}

/** Replaces every occurrence of the given secrets in a text (e.g. a provider's error message). */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let result = text;
  for (const secret of secrets) {
    if (secret.length >= 4) result = result.split(secret).join('[redacted]');
  }
  return result;
}
