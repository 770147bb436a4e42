import type { HangarConfig } from '../config';
import type { ResourceStatus } from '../resource';
import { boundConnections } from '../integrations/function-binding';
import { isProviderModel } from './provider-model';
import type { WorkloadKind } from './workload';

/**
 * What a workload kind is, apart from the API's schema of its spec: its names, the status and
 * first event of a new resource, and where its endpoint lives. The management API and the
 * provisioning saga (which creates functions) both read it here, so they cannot drift apart.
 */
export interface WorkloadKindTraits {
  /** Plural, as in /v0/{path}; also the `kind` column. */
  path: WorkloadKind;
  singular: string;
  initialStatus: ResourceStatus;
  /** The first event's message: what the new resource waits for. */
  initialMessage(spec: Record<string, unknown>): string;
  url(config: Pick<HangarConfig, 'runUrl' | 'baseUrl'>, workspace: string, name: string): string;
}

const awaitingCode = () => 'created; waiting for a code bundle to deploy';

export const WORKLOAD_KIND_TRAITS: Record<WorkloadKind, WorkloadKindTraits> = {
  agents: {
    path: 'agents',
    singular: 'agent',
    initialStatus: 'UPLOADING',
    initialMessage: awaitingCode,
    url: (config, workspace, name) => `${config.runUrl}/${workspace}/agents/${name}`,
  },
  models: {
    path: 'models',
    singular: 'model',
    initialStatus: 'UPLOADING',
    initialMessage: (spec) => (isProviderModel(spec) ? 'created; deploying the provider model' : awaitingCode()),
    url: (config, workspace, name) => `${config.runUrl}/${workspace}/models/${name}`,
  },
  functions: {
    path: 'functions',
    singular: 'function',
    initialStatus: 'UPLOADING',
    // A function bound to an integration's connection runs the integration's built-in server: no bundle to wait for.
    initialMessage: (spec) => (boundConnections(spec).length > 0 ? "created; deploying the integration's MCP server" : awaitingCode()),
    url: (config, workspace, name) => `${config.runUrl}/${workspace}/functions/${name}/mcp`,
  },
  jobs: {
    path: 'jobs',
    singular: 'job',
    initialStatus: 'UPLOADING',
    initialMessage: awaitingCode,
    url: (config, workspace, name) => `${config.baseUrl}/${workspace}/jobs/${name}`,
  },
};
