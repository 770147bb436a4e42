import { assertPortFree, waitUntilReady } from './readiness';
import { findLeftover, launchService, stopLeftover, type ServiceProcess, type ServiceSpec } from './service-process';
import { superviseService } from './service-supervisor';
import type { LaunchContext, StartedService } from './launch-context';

export type { Log, LaunchContext, StartedService } from './launch-context';

export interface LocalServicePlan {
  spec: Omit<ServiceSpec, 'bindToParent'>;
  /** Ports that must be free before launching, each with what it is for. */
  ports: { port: number; purpose: string }[];
  /** One readiness check; throws while the service is not ready. */
  probe: () => Promise<void>;
  /** Work before launching (after any leftover is gone): init a cluster, write configs. */
  prepare?: () => Promise<void>;
}

/** For external or reused services: nothing of ours to stop. */
export const notStarted: StartedService = { stop: async () => undefined };
const REUSE_CHECK_MS = 5_000;

/**
 * The life cycle every local service shares: deal with a leftover from an earlier run, check the
 * ports, launch, wait until ready (stopping it again if it never gets there).
 */
export async function runLocalService(ctx: LaunchContext, plan: LocalServicePlan): Promise<StartedService> {
  const { spec } = plan;
  const leftover = findLeftover(spec.pidFile, spec.marker);
  if (leftover !== undefined) {
    if (ctx.reuseRunning) {
      try {
        await waitUntilReady(spec.name, plan.probe, { timeoutMs: REUSE_CHECK_MS });
        ctx.log(`${spec.name}: reusing the instance already running (pid ${leftover})`);
        return notStarted;
      } catch {
        ctx.log(`${spec.name}: the instance left running (pid ${leftover}) does not answer; restarting it`);
      }
    } else {
      ctx.log(`${spec.name}: stopping an instance left over by an earlier run (pid ${leftover})`);
    }
    await stopLeftover(leftover, spec.stopSignal);
  }
  const launch = () => launchUntilReady(ctx, plan);
  return superviseService(ctx, spec, await launch(), launch);
}

/** Prepares, checks the ports, launches and waits until ready; a launch that never gets there is stopped again. */
export async function launchUntilReady(ctx: LaunchContext, plan: LocalServicePlan): Promise<ServiceProcess> {
  const { spec } = plan;
  await plan.prepare?.();
  for (const { port, purpose } of plan.ports) await assertPortFree(port, purpose);
  const proc = await launchService({ ...spec, bindToParent: ctx.bindToParent });
  try {
    await waitUntilReady(spec.name, plan.probe, { timeoutMs: ctx.readyTimeoutMs, process: proc, logFile: spec.logFile });
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return proc;
}
