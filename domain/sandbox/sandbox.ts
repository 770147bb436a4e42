import type { ExpirationPolicy } from './expiry';
import type { SandboxNetworkSpec } from './network-policy';

export interface SandboxEnv {
  name: string;
  value: string;
  secret?: boolean;
}

export interface SandboxVolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  /** The volume's uuid, added by the control plane for the node (never stored or shown). */
  volumeId?: string;
}

/** spec of a sandbox resource, as stored and as the lifecycle workflow receives it. */
export interface SandboxSpec {
  /** Fills `{region}` in the sandbox URL template; the platform's region when unset. */
  region?: string;
  runtime?: {
    image?: string;
    /** The `oci-registry` integration connection whose credentials pull `image` (a private registry's). */
    registryConnection?: string;
    memory?: number;
    envs?: SandboxEnv[];
    ports?: { name?: string; target: number; protocol?: string }[];
    ttl?: string;
    /** An absolute expiry (RFC 3339), enforced like ttl. */
    expires?: string;
    /** Stored and shown back as the reference defines it; standby here always keeps memory. */
    snapshotEnabled?: boolean;
    /** Sent by the reference SDK; accepted and ignored (one kind of sandbox here). */
    generation?: string;
  };
  lifecycle?: { expirationPolicies?: ExpirationPolicy[] };
  volumes?: SandboxVolumeMount[];
  /** Outbound network: allowed and forbidden domains (also under `proxy`), `internet: false` for none. */
  network?: SandboxNetworkSpec;
}

export type SandboxState = 'RUNNING' | 'STANDBY';

export const DEFAULT_SANDBOX_MEMORY_MB = 2048;

/** Identifies one sandbox everywhere: the resource row, the workflow and the runtime. */
export interface SandboxKey {
  /** The resource's uuid; also the runtime's sandbox id. */
  id: string;
  workspace: string;
  workspaceId: string;
  name: string;
}

export function sandboxWorkflowId(workspace: string, name: string): string {
  return `sandbox/${workspace}/${name}`;
}

/** The signal telling a sandbox's lifecycle workflow its node is LOST (with the node's last heartbeat, epoch ms). */
export const NODE_LOST_SIGNAL = 'nodeLost';
