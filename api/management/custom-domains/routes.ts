import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { WorkflowIdConflictPolicy } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ROUTES_CHANNEL } from '../../../domain/resource';
import type { HangarConfig } from '../../../domain/config';
import { StateHistory } from '../../../store/state-history';
import {
  customDomainRouteKey,
  customDomainWorkflowId,
  domainProblem,
  type CustomDomainKey,
  type CustomDomainSpec,
} from '../../../domain/custom-domain/custom-domain';
import type { CustomDomainLifecycleInput, customDomainLifecycle } from '../../../workflows/custom-domain-lifecycle';
import { badRequest, conflict } from '../../../domain/errors';
import { isUniqueViolation } from '../../../store/pg-errors';
import { NameParam, commonErrors } from '../common-schemas';
import { toEnvelope } from '../resources/envelope';
import { assertNameUnchanged, findNamed, missingResource } from '../resources/named';
import { startOwningWorkflow } from '../resources/owning-workflow';
import { ResourceStore, type ResourceRow } from '../../../store/resources';
import { requestWorkspace } from '../workspace-context';
import { CustomDomainEnvelope, CustomDomainInput } from './schemas';

const KIND = 'customdomains';
const tags = ['customdomains'];

/** Where a domain is reached: the run_url's scheme and port with the domain as host, at the target's path. */
function customDomainUrl(config: HangarConfig, spec: CustomDomainSpec): string {
  const url = new URL(config.runUrl);
  url.hostname = spec.domain;
  url.pathname = spec.target.kind === 'function' ? '/mcp' : '/';
  return url.toString();
}

/**
 * /v0/customdomains: a host name that routes to a workload of the workspace on run_url. The
 * domain's workflow, `customdomain/<workspace>/<name>`, activates it, meters it while it exists
 * and removes it.
 */
export default async function customDomainRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const history = new StateHistory(app.pg);
  const store = new ResourceStore(app.pg);
  const config = app.config;
  // The platform's own hosts: a domain claiming one would take over the platform's routes.
  const platformHosts = new Set([new URL(config.runUrl).hostname, new URL(config.baseUrl).hostname]);

  const envelope = (row: ResourceRow) => toEnvelope(row, customDomainUrl(config, row.spec as unknown as CustomDomainSpec));
  const missing = (name: string, workspace: string) => missingResource('custom domain', name, workspace);
  const keyOf = (row: ResourceRow, workspaceId: string): CustomDomainKey => ({ id: row.id, workspace: row.workspace, workspaceId, name: row.name });

  function checkDomain(domain: string): void {
    const problem = domainProblem('body.spec.domain', domain);
    if (problem) throw badRequest(problem);
    if (platformHosts.has(domain)) throw badRequest(`body.spec.domain '${domain}' is the platform's own host`);
  }

  /** Gateways drop what they cached for these routes (a host looked up before it was claimed is cached as unknown). */
  async function routesChanged(...keys: string[]): Promise<void> {
    for (const key of keys) await app.pg.query('SELECT pg_notify($1, $2)', [ROUTES_CHANNEL, key]);
  }

  /** Runs a write that may claim a host name; another domain holding it anywhere on the platform is a 409. */
  async function claiming<T>(domain: string, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (err) {
      // The message does not say which workspace holds it.
      if (isUniqueViolation(err)) throw conflict(`domain '${domain}' is already taken`);
      throw err;
    }
  }

  app.get(
    `/v0/${KIND}`,
    { schema: { tags, summary: 'List custom domains', response: { 200: Type.Array(CustomDomainEnvelope), ...commonErrors } } },
    async (request) => (await store.list(requestWorkspace(request).id, KIND)).map(envelope),
  );

  app.post(
    `/v0/${KIND}`,
    {
      schema: {
        tags,
        summary: 'Create a custom domain; it is DEPLOYING until it routes',
        body: CustomDomainInput,
        response: { 200: CustomDomainEnvelope, 409: commonErrors[400], ...commonErrors },
      },
    },
    async (request) => {
      const workspace = requestWorkspace(request);
      const { metadata, spec } = request.body;
      checkDomain(spec.domain);
      const row = await claiming(spec.domain, () =>
        store.create(
          { workspaceId: workspace.id, kind: KIND, name: metadata.name },
          { displayName: metadata.displayName ?? metadata.name, labels: metadata.labels ?? {}, spec: { domain: spec.domain, target: spec.target } },
          'DEPLOYING',
          'claiming the domain',
          request.principal.clientId,
        ),
      );
      if (!row) throw conflict(`custom domain '${metadata.name}' already exists in workspace '${workspace.name}'`);
      await routesChanged(customDomainRouteKey(spec.domain));
      await startOwningWorkflow(store, row.id, () =>
        app.temporal.workflow.start<typeof customDomainLifecycle>('customDomainLifecycle', {
          taskQueue: config.taskQueue,
          workflowId: customDomainWorkflowId(workspace.name, row.name),
          workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
          args: [{ key: keyOf(row, workspace.id), phase: 'create' } satisfies CustomDomainLifecycleInput],
        }),
      );
      return envelope(row);
    },
  );

  app.get(
    `/v0/${KIND}/:name`,
    { schema: { tags, summary: 'Get a custom domain', params: NameParam, response: { 200: CustomDomainEnvelope, ...commonErrors } } },
    async (request) => {
      const workspace = requestWorkspace(request);
      return envelope(await findNamed(store, KIND, 'custom domain', workspace, request.params.name));
    },
  );

  app.put(
    `/v0/${KIND}/:name`,
    {
      schema: {
        tags,
        summary: 'Change the host name, the target, labels or display name of a custom domain',
        params: NameParam,
        body: CustomDomainInput,
        response: { 200: CustomDomainEnvelope, 409: commonErrors[400], ...commonErrors },
      },
    },
    async (request) => {
      const workspace = requestWorkspace(request);
      const { metadata, spec } = request.body;
      assertNameUnchanged(metadata.name, request.params.name);
      checkDomain(spec.domain);
      const current = await findNamed(store, KIND, 'custom domain', workspace, request.params.name);
      if (current.status === 'DELETING') throw conflict(`custom domain '${current.name}' is being deleted`);
      const updated = await claiming(spec.domain, () =>
        store.update(
          { workspaceId: workspace.id, kind: KIND, name: request.params.name },
          { displayName: metadata.displayName ?? current.display_name, labels: metadata.labels ?? current.labels, spec: { domain: spec.domain, target: spec.target } },
          request.principal.clientId,
        ),
      );
      if (!updated) throw missing(request.params.name, workspace.name);
      // The id drops the entry of the old host name, the key a cached "unknown" of the new one.
      await routesChanged(updated.id, customDomainRouteKey(spec.domain));
      return envelope(updated);
    },
  );

  app.delete(
    `/v0/${KIND}/:name`,
    {
      schema: { tags, summary: 'Delete a custom domain; it stops routing at once', params: NameParam, response: { 200: CustomDomainEnvelope, ...commonErrors } },
    },
    async (request) => {
      const workspace = requestWorkspace(request);
      const row = await findNamed(store, KIND, 'custom domain', workspace, request.params.name);
      // Routing stops here, without waiting for the workflow, which records the last period of use and removes the record.
      if (row.status !== 'DELETING') {
        await store.transition(row.id, 'DELETING', { type: 'Normal', message: 'deleted by request' });
      }
      // Billing ends now too, in the state history as in the workflow (a repeated DELETE moves neither).
      const deletedAt = Date.now();
      await history.end(row.id, deletedAt);
      await app.temporal.workflow.signalWithStart<typeof customDomainLifecycle, [number]>('customDomainLifecycle', {
        taskQueue: config.taskQueue,
        workflowId: customDomainWorkflowId(workspace.name, row.name),
        args: [{ key: keyOf(row, workspace.id), phase: 'delete' }],
        signal: 'delete',
        signalArgs: [deletedAt],
      });
      return envelope({ ...row, status: 'DELETING' });
    },
  );
}
