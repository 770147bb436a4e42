import type { FastifyInstance } from 'fastify';
import fs from 'node:fs';
import { buildRunApp } from '../../api/gateway/run-app';
import type { HangarConfig } from '../../core/config';
import type { AppOptions } from '../../api/fastify';
import type { TestApp } from './platform';
import type { testRuntime } from './sandbox-runtime';
import type { RunningWorker } from './workers';

/** The run gateway (run_url) on a port of its own, as workload tests call it. */
export async function startRunGateway(config: HangarConfig, options: AppOptions = {}): Promise<{ gateway: FastifyInstance; runUrl: string }> {
  const gateway = await buildRunApp(config, options);
  const runUrl = await gateway.listen({ host: '127.0.0.1', port: 0 });
  return { gateway, runUrl };
}

/**
 * What a test of sandboxes or workloads started, stopped in order: the sandboxes it left (and the
 * runtime's warm ones), the workers, the gateway, the app and a scratch folder. Any part may be
 * missing (a failed set-up).
 */
export async function stopRuntimeTest(parts: {
  runtime?: ReturnType<typeof testRuntime>;
  node?: RunningWorker;
  control?: RunningWorker;
  gateway?: FastifyInstance;
  t?: TestApp;
  scratch?: string;
}): Promise<void> {
  const { runtime } = parts;
  for (const sandbox of (await runtime?.list()) ?? []) await runtime?.remove(sandbox.id).catch(() => undefined);
  await parts.node?.stop();
  await runtime?.close();
  await parts.control?.stop();
  await parts.gateway?.close();
  await parts.t?.close();
  if (parts.scratch) fs.rmSync(parts.scratch, { recursive: true, force: true });
}
