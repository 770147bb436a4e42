import { initialize, settings } from '@blaxel/core';
import type { HangarConfig } from '../../domain/config';
import { DEFAULT_API_VERSION } from '../../domain/versions';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from './platform';
import { freePort } from './ports';
import { startSandboxPlatform, stopRuntimeTest, type SandboxPlatform } from './runtime-platform';

/**
 * The reference service's own TypeScript SDK (`@blaxel/core`) pointed at a Hangar started by the
 * test helpers. Issue 16 allows exactly one adaptation, and this is it: a fetch wrapper that
 *  - renames the SDK's brand header names to Hangar's neutral spelling (`X-Blaxel-Workspace` ->
 *    `X-Service-Workspace`, `Blaxel-Version` -> `Service-Version`, ...), values untouched;
 *  - points the SDK's control-plane base URL at the address where the test's API listens. Sandbox
 *    URLs need no rewriting (only their headers renamed) when the test's gateway listens where
 *    Hangar's `metadata.url` says: see `sandboxGatewayConfig`.
 * Everything else the SDK sends goes out as the SDK built it, so a call that fails here fails for a
 * real user of the SDK too.
 *
 * The SDK reads `globalThis.fetch` at request time (its generated clients and its direct calls alike),
 * and jest gives every test file a global of its own, so replacing it reaches every SDK request
 * without touching the SDK's code or leaking into other test files.
 */

/** `from` (a URL prefix the SDK uses) is sent to `to` instead. */
export interface BaseUrlRoute {
  from: string;
  to: string;
}

/** Hangar's name for one of the SDK's header names: its brand word becomes `Service`. */
export function hangarHeaderName(name: string): string {
  return name.replace(/blaxel/i, 'Service');
}

/** The request's URL with the first matching route's prefix replaced, or undefined if none matches. */
export function routedUrl(url: string, routes: readonly BaseUrlRoute[]): string | undefined {
  const route = routes.find((r) => url === r.from || url.startsWith(r.from.endsWith('/') ? r.from : `${r.from}/`) || url.startsWith(`${r.from}?`));
  return route ? route.to + url.slice(route.from.length) : undefined;
}

/** The SDK's hosts: a request there that no route covers is a harness bug, never sent to the internet. */
const REFERENCE_HOSTS = /(^|\.)(blaxel\.ai|blaxel\.dev|bl\.run)$/;

/** Wraps `inner` so that requests to a routed prefix reach Hangar with Hangar's header names. */
export function hangarFetch(inner: typeof fetch, routes: readonly BaseUrlRoute[]): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const target = routedUrl(request.url, routes);
    if (target === undefined) {
      if (REFERENCE_HOSTS.test(new URL(request.url).hostname)) throw new Error(`reference SDK harness: no route for ${request.method} ${request.url}`);
      return inner(request);
    }
    const headers = new Headers();
    request.headers.forEach((value, name) => headers.set(hangarHeaderName(name), value));
    // duplex 'half' lets a streamed request body (multipart parts, large writes) pass through as a stream.
    return inner(new Request(target, { method: request.method, headers, body: request.body, redirect: request.redirect, signal: request.signal, duplex: 'half' } as RequestInit));
  };
}

/** Where the test's Hangar listens, and whom the SDK acts as. */
export interface ReferenceSdkTarget {
  /** The management API's origin, e.g. http://127.0.0.1:41234. */
  apiOrigin: string;
  /** The origin of the sandbox URLs Hangar hands out, where the test's sandbox gateway listens. */
  sandboxOrigin: string;
  apiKey: string;
  workspace: string;
}

/**
 * Configuration overrides that make Hangar's sandbox URLs (`metadata.url`) name a port that is
 * free now, so that the test's sandbox gateway can listen exactly there and the SDK reaches it as a
 * user's would: the gateway routes by the Host header, which a rewriting fetch cannot keep.
 */
export async function sandboxGatewayConfig(): Promise<Pick<HangarConfig, 'host' | 'sandboxPort' | 'sandboxUrlTemplate'>> {
  const sandboxPort = await freePort();
  return { host: '127.0.0.1', sandboxPort, sandboxUrlTemplate: `http://127.0.0.1:${sandboxPort}/{workspace_id}/{sandbox_id}` };
}

/**
 * Configures the SDK (its own `initialize` and environment, as a user would) and installs the fetch
 * wrapper on this test file's global. Returns the function that restores the previous fetch and
 * environment.
 */
export function useReferenceSdk(target: ReferenceSdkTarget): () => void {
  // The SDK announces the reference's API version (2026-04-28 in 0.3.21), which Hangar does not
  // know (400 invalid_api_version on every call; a gap of issue 16). Its own BL_API_VERSION setting
  // makes it announce Hangar's version instead, so the rest of the surface can be tried.
  const previousVersion = process.env.BL_API_VERSION;
  process.env.BL_API_VERSION = DEFAULT_API_VERSION;
  initialize({ apiKey: target.apiKey, workspace: target.workspace });
  const previous = globalThis.fetch;
  const routes: BaseUrlRoute[] = [
    // settings.baseUrl is where the SDK sends management calls (https://api.<brand>/v0 by default).
    { from: settings.baseUrl.replace(/\/v0\/?$/, ''), to: target.apiOrigin },
    { from: target.sandboxOrigin, to: target.sandboxOrigin },
  ];
  globalThis.fetch = hangarFetch(previous, routes);
  return () => {
    globalThis.fetch = previous;
    if (previousVersion === undefined) delete process.env.BL_API_VERSION;
    else process.env.BL_API_VERSION = previousVersion;
  };
}

/** A Hangar for an SDK test file: the app, a tenant, the sandbox platform, and the SDK pointed at them. */
export interface ReferenceSdkPlatform extends SandboxPlatform {
  t: TestApp;
  tenant: TestTenant;
  /** Restores fetch and the environment, removes the sandboxes left, stops everything. */
  stop(): Promise<void>;
}

/**
 * Starts the app with `overrides`, a tenant (its admin is whom the SDK acts as) and the sandbox
 * platform, the API and the sandbox gateway listening where the SDK reaches them, and configures
 * the SDK (useReferenceSdk).
 */
export async function startReferenceSdkPlatform(label: string, overrides: Partial<HangarConfig> = {}): Promise<ReferenceSdkPlatform> {
  const sandboxUrls = await sandboxGatewayConfig();
  const t = await startTestApp({ taskQueue: unique(label), ...overrides, ...sandboxUrls });
  const tenant = await createTenant(t.app.pg, label);
  const platform = await startSandboxPlatform(t);
  const apiOrigin = await t.app.listen({ host: '127.0.0.1', port: 0 });
  const sandboxOrigin = await platform.gateway.listen({ host: sandboxUrls.host, port: sandboxUrls.sandboxPort });
  const restore = useReferenceSdk({ apiOrigin, sandboxOrigin, apiKey: tenant.admin.apiKey, workspace: tenant.workspace });
  return {
    ...platform,
    t,
    tenant,
    stop: async () => {
      restore();
      await stopRuntimeTest({ ...platform, t });
    },
  };
}
