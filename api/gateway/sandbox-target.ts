import type http from 'node:http';
import type { ProxyOptions } from '../../runtime/http-proxy';

/**
 * Where the sandbox gateway sends a request for a sandbox that runs: its own API (the default),
 * or another socket of it (a port's forwarder, for previews) chosen once it runs; and which
 * headers cross each way.
 */
export interface SandboxTarget {
  resourceId: string;
  workflowId: string;
  /** Path and query inside the sandbox. */
  path: string;
  upstream?: () => Promise<{ socketPath: string; agent: http.Agent }>;
  headers?: Pick<ProxyOptions, 'requestHeaders' | 'responseHeaders'>;
  /** Told when the upstream did not answer (its socket may be stale). */
  onUnreachable?: () => void;
  /**
   * Keep the sandbox in use for as long as the answer lasts: traffic to a forwarded port is not
   * the agent's, so the agent's own count of requests in flight does not see it.
   */
  holdWhileAnswering?: boolean;
}
