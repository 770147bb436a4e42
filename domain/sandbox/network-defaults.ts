import { networkSpecProblem, type SandboxNetworkSpec } from './network-policy';

const RULE_FIELDS = ['allowedDomains', 'forbiddenDomains'] as const;

function rulesShapeProblem(value: unknown, at: string, allowed: readonly string[]): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return `${at} must be an object`;
  for (const [field, entry] of Object.entries(value)) {
    if (!allowed.includes(field)) return `${at}.${field} is not a field of spec.network (${allowed.join(', ')})`;
    if (field === 'internet' && typeof entry !== 'boolean') return `${at}.internet must be true or false`;
    if ((RULE_FIELDS as readonly string[]).includes(field) && (!Array.isArray(entry) || entry.some((item) => typeof item !== 'string'))) {
      return `${at}.${field} must be a list of strings`;
    }
  }
  return undefined;
}

/**
 * A `spec.network` given as plain data (an operator's JSON), or what is wrong with it, naming the
 * place (`at.allowedDomains[2] ...`): the same shape and entry rules as a sandbox's own.
 */
export function parseNetworkSpec(value: unknown, at: string): SandboxNetworkSpec | { problem: string } {
  const shape = rulesShapeProblem(value, at, [...RULE_FIELDS, 'internet', 'proxy']);
  if (shape) return { problem: shape };
  const spec = value as SandboxNetworkSpec;
  const proxyShape = spec.proxy === undefined ? undefined : rulesShapeProblem(spec.proxy, `${at}.proxy`, RULE_FIELDS);
  if (proxyShape) return { problem: proxyShape };
  const entries = networkSpecProblem(spec, at);
  return entries ? { problem: entries } : spec;
}

/**
 * The network policy a new sandbox gets: its own `spec.network` when it gives one, else its
 * workspace's default, else the platform's. Whole policies, not merged field by field: a
 * sandbox's allow list is never widened or narrowed by a default it did not see.
 */
export function resolvedNetwork(
  own: SandboxNetworkSpec | undefined,
  workspaceDefault: SandboxNetworkSpec | undefined,
  platformDefault: SandboxNetworkSpec | undefined,
): SandboxNetworkSpec | undefined {
  return own ?? workspaceDefault ?? platformDefault;
}

