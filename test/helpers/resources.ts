import type { FastifyInstance } from 'fastify';
import { renderSandboxUrl } from '../../domain/sandbox/url-template';
import type { TestApp, TestTenant } from './platform';
import { eventually } from './workers';

type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/**
 * One tenant's view of resources whose life a workflow drives (sandboxes, volumes): the API as
 * its account admin, and waits for a status or for the resource to be gone.
 */
export function tenantResources(t: TestApp, tenant: TestTenant) {
  const api = (method: Method, url: string, payload?: object) => t.call(tenant.admin.apiKey, { method, url, payload, workspace: tenant.workspace });
  return {
    api,
    /** The resource's body once it has `wanted` status; a FAILED one is reported with its events. */
    status: (kind: string, name: string, wanted: string, timeoutMs = 60_000) =>
      eventually(`${kind} ${name} ${wanted}`, async () => {
        const body = (await api('GET', `/v0/${kind}/${name}`)).json();
        if (body.status === 'FAILED') throw new Error(JSON.stringify(body.events));
        return body.status === wanted ? body : undefined;
      }, timeoutMs),
    gone: (kind: string, name: string, timeoutMs = 60_000) =>
      eventually(`${kind} ${name} gone`, async () => ((await api('GET', `/v0/${kind}/${name}`)).statusCode === 404 ? true : undefined), timeoutMs),
    /** The resource's uuid (the runtime's id for a sandbox). */
    idOf: async (kind: string, name: string) =>
      (await t.app.pg.query<{ id: string }>('SELECT id FROM resources WHERE workspace_id = $1 AND kind = $2 AND name = $3', [tenant.workspaceId, kind, name])).rows[0].id,
    /** A call to a sandbox's own API through the gateway, at the address its metadata.url gives. */
    sandboxCall: (gateway: FastifyInstance, name: string, method: Method, path: string, payload?: object, key = tenant.admin.apiKey) => {
      const base = new URL(renderSandboxUrl(t.config.sandboxUrlTemplate, { workspace_id: tenant.workspace, sandbox_id: name, region: t.config.region }));
      return gateway.inject({
        method,
        url: `${base.pathname}${path}`,
        headers: { host: base.host, authorization: `Bearer ${key}`, ...(payload ? { 'content-type': 'application/json' } : {}) },
        payload: payload ? JSON.stringify(payload) : undefined,
      });
    },
  };
}
