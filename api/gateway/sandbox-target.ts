import type { SandboxUpstream } from './sandbox-ports';
import type { RouteNode } from './remote-nodes';

/** A sandbox and the node it runs on, as its route says. */
export interface SandboxAt {
  resourceId: string;
  node: RouteNode;
}

/**
 * A request the sandbox gateway serves for a sandbox that runs or stands by: which sandbox (to
 * wake or touch it), and where the request goes once it runs: its own API, a port's forwarder
 * (`/port/{port}`, a port preview), with the headers that cross each way.
 */
export interface SandboxTarget extends SandboxAt {
  workflowId: string;
  /** Chosen once the sandbox runs: a port's forwarder is opened by the sandbox's API. */
  upstream(): Promise<SandboxUpstream>;
}
