import { expirationPolicyProblem } from './expiry';
import { networkSpecProblem } from './network-policy';
import type { SandboxSpec } from './sandbox';

/** Fields that shape the running sandbox; changing them means creating a new one. */
const IMMUTABLE_RUNTIME_FIELDS = ['image', 'memory', 'ports'] as const;

/**
 * What is wrong with a sandbox spec beyond its schema (its expiration policies, an expiry not in
 * the future), named by field; undefined when nothing is. `before`, on an update: an expiry kept
 * as it was is not checked again (the SDK sends the whole sandbox back, and one past deletes it anyway).
 */
export function sandboxSpecProblem(spec: SandboxSpec, now: number, before?: SandboxSpec): string | undefined {
  const expires = spec.runtime?.expires;
  if (expires !== undefined && expires !== before?.runtime?.expires) {
    const at = Date.parse(expires);
    if (Number.isNaN(at)) return `body.spec.runtime.expires must be an RFC 3339 date, got '${expires}'`;
    if (at <= now) return `body.spec.runtime.expires must be in the future, got ${expires}`;
  }
  const policies = spec.lifecycle?.expirationPolicies ?? [];
  for (const [i, policy] of policies.entries()) {
    const problem = expirationPolicyProblem(policy, `body.spec.lifecycle.expirationPolicies[${i}]`);
    if (problem) return problem;
  }
  return networkSpecProblem(spec.network);
}

/**
 * Why a running sandbox cannot take `next` in place of `before`: its image, memory, ports or
 * region (its URL) or volumes changed, which only a new sandbox can have. Undefined when the change
 * is allowed (labels, ttl, expires, snapshotEnabled, expiration policies, envs, network domains).
 */
export function sandboxSpecChangeProblem(before: SandboxSpec, next: SandboxSpec): string | undefined {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  for (const field of IMMUTABLE_RUNTIME_FIELDS) {
    if (!same(before.runtime?.[field], next.runtime?.[field])) {
      return `body.spec.runtime.${field} cannot change on a running sandbox; create a new sandbox instead`;
    }
  }
  if (!same(before.region, next.region)) return 'body.spec.region cannot change on a running sandbox; create a new sandbox instead';
  if (!same(before.volumes, next.volumes)) return 'body.spec.volumes cannot change on a running sandbox; create a new sandbox instead';
  // A sandbox has a network namespace with outbound network, or loopback only, from its start.
  if ((before.network?.internet !== false) !== (next.network?.internet !== false)) {
    return 'body.spec.network.internet cannot change on a running sandbox; create a new sandbox instead';
  }
  return undefined;
}

/**
 * Whether an update changes the sandbox's environment variables. The running sandbox takes them
 * as the reference's does: every process started afterwards sees the new values, running ones
 * keep theirs, and nothing is recreated.
 */
export function envsChanged(before: SandboxSpec, next: SandboxSpec): boolean {
  return JSON.stringify(before.runtime?.envs ?? []) !== JSON.stringify(next.runtime?.envs ?? []);
}

/** Whether an update changes the network policy (a sandbox's: applied from its next connection on; a workload's: a new revision). */
export function networkChanged(before: Pick<SandboxSpec, 'network'>, next: Pick<SandboxSpec, 'network'>): boolean {
  return JSON.stringify(before.network ?? null) !== JSON.stringify(next.network ?? null);
}
