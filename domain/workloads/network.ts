import { networkSpecProblem, networkUnavailableProblem, type SandboxNetworkSpec } from '../sandbox/network-policy';
import { isProviderModel } from './provider-model';
import type { WorkloadKind, WorkloadSpec } from './workload';

/** No egress at all: a namespace of the sandbox's own with loopback only. */
const LOOPBACK_ONLY: SandboxNetworkSpec = { internet: false };

/**
 * The network a workload's instance (or a job's execution) runs with: its `spec.network`, and
 * loopback only without one. Unlike a sandbox, whose default is the internet, a workload had no
 * network before `spec.network` existed, and a deployed service reaching out is something its
 * owner asks for.
 */
export function workloadNetwork(spec: { network?: SandboxNetworkSpec }): SandboxNetworkSpec {
  return spec.network ?? LOOPBACK_ONLY;
}

/**
 * What is wrong with a workload's `spec.network`, naming the entry (the sandboxes' rules, one
 * code for both), or where nothing would apply it: a node without networking, a provider model
 * (nothing of it runs on a node). Undefined when nothing is.
 */
export function workloadNetworkProblem(kind: WorkloadKind, spec: WorkloadSpec, nodesHaveNetwork: boolean): string | undefined {
  const { network } = spec;
  if (network === undefined) return undefined;
  if (kind === 'models' && isProviderModel(spec)) {
    return 'body.spec.network: a provider model runs on no node (the gateway calls its endpoint); remove spec.network';
  }
  return networkSpecProblem(network) ?? networkUnavailableProblem(network, nodesHaveNetwork);
}
