import type { FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { buildRunApp } from '../../api/gateway/run-app';
import { buildSandboxGatewayApp } from '../../api/gateway/sandbox-app';
import type { DeployTarget } from '../../cli/deploy';
import type { HangarConfig } from '../../domain/config';
import type { AppOptions } from '../../api/fastify';
import type { BwrapRuntimeOptions } from '../../runtime/bwrap-runtime';
import type { TestApp, TestTenant } from './platform';
import type { SandboxNetwork } from '../../runtime/network/sandbox-network';
import { testRuntime } from './sandbox-runtime';
import { testSandboxNetwork } from './test-internet';
import { startControlWorker, startNodeWorker, type RunningWorker } from './workers';

/** The run gateway (run_url) on a port of its own, as workload tests call it. */
export async function startRunGateway(config: HangarConfig, options: AppOptions = {}): Promise<{ gateway: FastifyInstance; runUrl: string }> {
  const gateway = await buildRunApp(config, options);
  const runUrl = await gateway.listen({ host: '127.0.0.1', port: 0 });
  return { gateway, runUrl };
}

/** What workload tests run beside their app: a node's runtime, the run gateway and both workers. */
export interface WorkloadPlatform {
  runtime: ReturnType<typeof testRuntime>;
  gateway: FastifyInstance;
  runUrl: string;
  control: RunningWorker;
  node: RunningWorker;
}

/** Starts the workload platform for the app `t`; on a failure, stops what it had started. */
export async function startWorkloadPlatform(
  t: TestApp,
  options: { runtime?: Partial<BwrapRuntimeOptions>; gateway?: AppOptions } = {},
): Promise<WorkloadPlatform> {
  const runtime = testRuntime(t.config.dataDir, options.runtime);
  const started: Partial<WorkloadPlatform> = { runtime };
  try {
    // A node worker fills its warm pool once base-image is on the node: the suite's has it.
    await runtime.prewarm();
    Object.assign(started, await startRunGateway(t.config, options.gateway));
    started.control = await startControlWorker(t.config, t.app.pg);
    started.node = await startNodeWorker(t.config, runtime);
    return started as WorkloadPlatform;
  } catch (err) {
    await stopRuntimeTest(started);
    throw err;
  }
}

/** What sandbox tests run beside their app: a node's runtime, the sandbox gateway and both workers. */
export interface SandboxPlatform {
  runtime: ReturnType<typeof testRuntime>;
  gateway: FastifyInstance;
  control: RunningWorker;
  node: RunningWorker;
}

/** The node networks sandbox platforms made for their runtimes, torn down with them. */
const ownNetworks = new WeakMap<ReturnType<typeof testRuntime>, SandboxNetwork>();

/**
 * Starts the sandbox platform for the app `t`; on a failure, stops what it had started. Like a
 * node of the platform by default, its sandboxes have outbound network (a node network of the
 * test file's own, resolving no names) unless the configuration turns it off or the caller passes
 * `network` itself (undefined for none).
 */
export async function startSandboxPlatform(t: TestApp, runtimeOptions: Partial<BwrapRuntimeOptions> = {}): Promise<SandboxPlatform> {
  const started: Partial<SandboxPlatform> = {};
  let ownNetwork: SandboxNetwork | undefined;
  try {
    if (!('network' in runtimeOptions) && t.config.sandboxNetwork) {
      ownNetwork = testSandboxNetwork(path.join(t.config.dataDir, `node-network-${process.pid}-${randomBytes(2).toString('hex')}`), () => ({}));
      await ownNetwork.start();
    }
    const runtime = testRuntime(t.config.dataDir, { ...(ownNetwork ? { network: ownNetwork } : {}), ...runtimeOptions });
    started.runtime = runtime;
    if (ownNetwork) ownNetworks.set(runtime, ownNetwork);
    // A node worker fills its warm pool once base-image is on the node (a node of the test's own folder may not have it).
    await runtime.prewarm();
    started.gateway = await buildSandboxGatewayApp(t.config, runtime);
    started.control = await startControlWorker(t.config, t.app.pg);
    started.node = await startNodeWorker(t.config, runtime);
    return started as SandboxPlatform;
  } catch (err) {
    await stopRuntimeTest(started);
    if (!started.runtime) await ownNetwork?.tearDown();
    throw err;
  }
}

/** Where the deploy CLI reaches the app `t` (listening) as `tenant`'s admin. */
export function deployTarget(t: TestApp, tenant: TestTenant): DeployTarget {
  return { baseUrl: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`, apiKey: tenant.admin.apiKey, workspace: tenant.workspace };
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
  if (runtime) await ownNetworks.get(runtime)?.tearDown();
  await parts.t?.close();
  if (parts.scratch) fs.rmSync(parts.scratch, { recursive: true, force: true });
}
