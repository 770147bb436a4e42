import * as foundation from './001_foundation';
import * as billing from './002_billing';
import * as integrations from './003_integrations';
import * as workloads from './004_workloads';
import * as jobs from './005_jobs';
import * as asyncRequests from './006_async_requests';
import * as customDomains from './008_custom_domains';
import * as agentThreads from './010_agent_threads';
import * as usageOutboxTsv from './011_usage_outbox_tsv';
import * as usagePendingRollups from './012_usage_pending_rollups';
import * as usageAdditiveRollups from './013_usage_additive_rollups';
import * as resourceStateIntervals from './014_resource_state_intervals';
import * as sandboxPreviews from './015_sandbox_previews';
import * as sandboxSnapshots from './016_sandbox_snapshots';
import * as workspaceSandboxNetwork from './017_workspace_sandbox_network';
import * as workspaceImages from './019_workspace_images';
import * as nodes from './021_nodes';
import * as jobExecutionNodes from './022_job_execution_nodes';
import * as resourceNodes from './023_resource_nodes';
import * as nodeImages from './024_node_images';
import * as abandonedSandboxes from './025_abandoned_sandboxes';
import * as registryImages from './026_registry_images';
import * as resourcePlacedAt from './027_resource_placed_at';
import * as recordedImages from './028_recorded_images';
import * as snapshotReadyAt from './029_snapshot_ready_at';

export interface Migration {
  name: string;
  sql: string;
}

/** Applied in this order; a migration, once released, is never edited: add a new one. */
export const migrations: Migration[] = [foundation, billing, integrations, workloads, jobs, asyncRequests, customDomains, agentThreads, usageOutboxTsv, usagePendingRollups, usageAdditiveRollups, resourceStateIntervals, sandboxPreviews, sandboxSnapshots, workspaceSandboxNetwork, workspaceImages, nodes, jobExecutionNodes, resourceNodes, nodeImages, abandonedSandboxes, registryImages, resourcePlacedAt, recordedImages, snapshotReadyAt];
