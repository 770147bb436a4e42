import path from 'node:path';
import { decideRestart, describeRestart, NO_CRASH_YET } from '../restart-policy';
import type { LaunchContext, ServiceEvent, StartedService } from './launch-context';
import type { ServiceProcess, ServiceSpec } from './service-process';

export type { ServiceEvent } from './launch-context';


/**
 * Keeps one local service running as systemd would: when it dies on its own (a crash, the OOM
 * killer, someone's kill -9), whatever it forked goes too, and it is launched again after the
 * policy's delay, until the policy's budget is spent; a restart that fails to get ready counts
 * as another death. Every step is told through ctx.onServiceEvent. stop() ends it for good.
 */
export function superviseService(ctx: LaunchContext, spec: Pick<ServiceSpec, 'name' | 'logFile'>, first: ServiceProcess, launch: () => Promise<ServiceProcess>): StartedService {
  const { name } = spec;
  const seeLog = `see ${path.relative(process.cwd(), spec.logFile) || spec.logFile}`;
  const emit = (kind: ServiceEvent['kind'], message: string) => ctx.onServiceEvent?.({ service: name, kind, message });
  let current: ServiceProcess | undefined;
  let readyAt = Date.now();
  let restarts = NO_CRASH_YET;
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let relaunching: Promise<void> | undefined;

  const died = (how: string, upForMs: number) => {
    const policy = ctx.restartPolicy;
    if (!policy) return emit('died', `${name} died (${how}; ${seeLog})`);
    const next = decideRestart(policy, restarts, { at: Date.now(), upForMs });
    restarts = next.state;
    const { decision } = next;
    if (!decision.restart) {
      return emit('gave-up', `${name} died (${how}; ${seeLog}) after ${decision.restartsInWindow} restarts in ${policy.budget!.windowMs / 1000}s: giving up`);
    }
    emit('died', `${name} died (${how}; ${seeLog}); restarting in ${decision.delayMs / 1000}s (${describeRestart(policy, decision.restartInWindow)})`);
    timer = setTimeout(() => (relaunching = relaunch()), decision.delayMs);
  };

  const relaunch = async () => {
    const began = Date.now();
    let proc: ServiceProcess;
    try {
      proc = await launch();
    } catch (err) {
      // The first line says why; the log tail that follows it is in the service's log anyway.
      if (!stopping) died(`restart failed: ${String((err as Error).message).split('\n')[0]}`, Date.now() - began);
      return;
    }
    if (stopping) return proc.stop();
    watch(proc);
    emit('back', `${name} is back (ready ${((Date.now() - began) / 1000).toFixed(1)}s after its restart)`);
  };

  const watch = (proc: ServiceProcess) => {
    current = proc;
    readyAt = Date.now();
    void proc.exited.then(async (how) => {
      if (stopping) return;
      current = undefined;
      // Helpers it forked (PostgreSQL's backends hold its shared memory) must not block the restart.
      await proc.stop();
      if (!stopping) died(how, Date.now() - readyAt);
    });
  };

  watch(first);
  return {
    stop: async () => {
      stopping = true;
      clearTimeout(timer);
      await relaunching;
      await current?.stop();
    },
  };
}
