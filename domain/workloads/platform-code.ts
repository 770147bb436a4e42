import { HOST_IMAGE, DEFAULT_IMAGE } from '../images/builtin';
import { boundConnections } from '../integrations/function-binding';
import { isProviderModel } from './provider-model';
import type { WorkloadKind, WorkloadSpec } from './workload';

/**
 * Whether a workload deploys from its spec alone, running the platform's own code rather than a
 * bundle: a function bound to an integration connection (the node runs the integration's
 * built-in MCP server) or a provider model (served elsewhere).
 */
export function deploysWithoutBundle(kind: WorkloadKind, spec: WorkloadSpec): boolean {
  return kind === 'functions' ? boundConnections(spec).length > 0 : kind === 'models' && isProviderModel(spec);
}

/**
 * The image a new workload naming none records: the platform's own code, compiled for the
 * platform's Node 24 (base-image's is Debian 12's Node 18), stays on `base`, the host's folders,
 * where the node's own Node runs it; a user's code gets the platform's default.
 */
export function defaultWorkloadImage(kind: WorkloadKind, spec: WorkloadSpec): string {
  return deploysWithoutBundle(kind, spec) ? HOST_IMAGE : DEFAULT_IMAGE;
}
