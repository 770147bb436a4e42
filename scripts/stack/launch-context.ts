/** How startStack runs its local services, and what it hears back from them. */
import type { RestartPolicy } from '../restart-policy';

export type Log = (line: string) => void;

/** How startStack runs local services; see StackOptions in index.ts. */
export interface LaunchContext {
  log: Log;
  /** Stop the service when this process dies (false: it outlives us on purpose). */
  bindToParent: boolean;
  /** Adopt a healthy service left running by an earlier start instead of restarting it. */
  reuseRunning: boolean;
  readyTimeoutMs: number;
  /** Start a service this start launched again when it dies on its own; without one a death is only reported. */
  restartPolicy?: RestartPolicy;
  /** Told when a service this start launched dies without being asked to, is back, or is given up. */
  onServiceEvent?: (event: ServiceEvent) => void;
}

export interface StartedService {
  /** Stops the service if this start launched it; a no-op for a reused or external one. */
  stop(): Promise<void>;
}

/** What happened to a local service after it was first ready, in words for the operator. */
export interface ServiceEvent {
  service: string;
  /** died: it exited on its own (a restart follows when there is a policy); back: a restart is ready; gave-up: no more restarts. */
  kind: 'died' | 'back' | 'gave-up';
  message: string;
}
