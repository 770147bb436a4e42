import { expirationPolicyProblem } from './expiry';
import type { SandboxSpec } from './sandbox';

/** Fields that shape the running sandbox; changing them means creating a new one. */
const IMMUTABLE_RUNTIME_FIELDS = ['image', 'memory', 'envs', 'ports'] as const;

/** What is wrong with a sandbox spec beyond its schema (its expiration policies), named by field; undefined when nothing is. */
export function sandboxSpecProblem(spec: SandboxSpec): string | undefined {
  const policies = spec.lifecycle?.expirationPolicies ?? [];
  for (const [i, policy] of policies.entries()) {
    const problem = expirationPolicyProblem(policy, `body.spec.lifecycle.expirationPolicies[${i}]`);
    if (problem) return problem;
  }
  return undefined;
}

/**
 * Why a running sandbox cannot take `next` in place of `before`: its image, memory, env, ports or
 * volumes changed, which only a new sandbox can have. Undefined when the change is allowed (labels,
 * ttl, expiration policies).
 */
export function sandboxSpecChangeProblem(before: SandboxSpec, next: SandboxSpec): string | undefined {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  for (const field of IMMUTABLE_RUNTIME_FIELDS) {
    if (!same(before.runtime?.[field], next.runtime?.[field])) {
      return `body.spec.runtime.${field} cannot change on a running sandbox; create a new sandbox instead`;
    }
  }
  if (!same(before.volumes, next.volumes)) return 'body.spec.volumes cannot change on a running sandbox; create a new sandbox instead';
  return undefined;
}
