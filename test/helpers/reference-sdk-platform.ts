import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from './platform';
import { sandboxGatewayConfig, useReferenceSdk } from './reference-sdk';
import { startSandboxPlatform, stopRuntimeTest } from './runtime-platform';

/** A Hangar (API, sandbox gateway, workers) driven by the reference SDK, with one tenant, for one test file. */
export interface ReferenceSdkPlatform {
  t: TestApp;
  tenant: TestTenant;
  /** The gateway's origin, where the sandbox URLs point. */
  sandboxOrigin: string;
  stop(): Promise<void>;
}

/** Starts a Hangar for a test file and points the SDK at it (useReferenceSdk); `stop` undoes both. */
export async function startReferenceSdkPlatform(label: string): Promise<ReferenceSdkPlatform> {
  const sandboxUrls = await sandboxGatewayConfig();
  const t = await startTestApp({ taskQueue: unique(label), ...sandboxUrls });
  const tenant = await createTenant(t.app.pg, label);
  const { runtime, gateway, control, node } = await startSandboxPlatform(t);
  const apiOrigin = await t.app.listen({ host: '127.0.0.1', port: 0 });
  const sandboxOrigin = await gateway.listen({ host: sandboxUrls.host, port: sandboxUrls.sandboxPort });
  const restore = useReferenceSdk({ apiOrigin, sandboxOrigin, apiKey: tenant.admin.apiKey, workspace: tenant.workspace });
  return {
    t,
    tenant,
    sandboxOrigin,
    stop: async () => {
      restore();
      await stopRuntimeTest({ runtime, node, control, gateway, t });
    },
  };
}
