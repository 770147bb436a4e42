import type { Pool } from 'pg';
import { queryFingerprint } from '../../domain/billing/cursor';
import { InvalidInput } from '../../domain/billing/errors';
import { GROUP_BY_DIMENSIONS, parseMetricsQuery, parseWindowQuery } from '../../domain/billing/metrics-query';
import type { MetricsScope } from '../../domain/billing/metrics-sql';
import type { UsageTables } from '../../domain/billing/storage';
import { encodeUsageBody } from '../../domain/billing/usage-body';
import { ApiError, badRequest, forbidden, notFound } from '../../domain/errors';
import type { Principal } from '../../domain/principal';
import { acceptUsageBatch, loadPrices, UsageConflict, type AcceptResult } from '../../store/usage-outbox';
import type { MetricsReader } from './metrics-reader';

/** What the billing operations work with: the metrics reads, the usage tables they read, the database that takes events. */
export interface BillingServices {
  reader: MetricsReader;
  tables: UsageTables;
  pg: Pool;
}

type Caller = Pick<Principal, 'accountId' | 'accountAdmin' | 'workspaces'>;
type RawQuery = Record<string, unknown>;

/** The account of the path, when the caller belongs to it; 404 otherwise (nothing is revealed). */
function memberAccount(caller: Caller, accountId: string): string {
  if (accountId !== caller.accountId) throw notFound(`account '${accountId}' not found`);
  return accountId;
}

function scopeOf(tables: UsageTables, caller: Caller, accountId: string): MetricsScope {
  return {
    tables,
    accountId,
    // A caller who is not an account admin sees only the workspaces they belong to.
    visibleWorkspaces: caller.accountAdmin ? undefined : [...caller.workspaces.keys()].sort(),
  };
}

function parseNoQuery(query: RawQuery): void {
  const name = Object.keys(query)[0];
  if (name !== undefined) throw new InvalidInput(name, `unsupported query parameter '${name}'`);
}

function invalidInputError(err: InvalidInput): ApiError {
  return err.index === undefined ? badRequest(err.message) : badRequest(err.message, { index: err.index, field: err.parameter });
}

/** Runs `work`, turning a client mistake found by domain/billing into a 400. */
async function asBadRequest<T>(work: () => T | Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw err instanceof InvalidInput ? invalidInputError(err) : err;
  }
}

/** Cost and usage of an account, grouped and bucketed; the workspace dimension is for account admins only. */
export async function accountMetrics(services: BillingServices, caller: Caller, accountId: string, rawQuery: RawQuery) {
  memberAccount(caller, accountId);
  const query = await asBadRequest(() => parseMetricsQuery(rawQuery));
  if (!caller.accountAdmin) {
    if (query.filters.workspace !== undefined) throw forbidden('the workspace parameter is reserved to account admins');
    if (query.groupBy.includes('workspace')) throw forbidden('groupBy workspace is reserved to account admins');
  }
  const scope = scopeOf(services.tables, caller, accountId);
  const fingerprint = queryFingerprint(accountId, query, scope.visibleWorkspaces);
  return await asBadRequest(() => services.reader.metrics(scope, query, fingerprint));
}

/** The valid groupBy values; the endpoint takes no query parameter. */
export async function groupByDimensions(caller: Caller, accountId: string, rawQuery: RawQuery): Promise<string[]> {
  memberAccount(caller, accountId);
  await asBadRequest(() => parseNoQuery(rawQuery));
  return [...GROUP_BY_DIMENSIONS];
}

/** Resource types with at least one usage event in the window. */
export async function usedResourceTypes(services: BillingServices, caller: Caller, accountId: string, rawQuery: RawQuery): Promise<string[]> {
  memberAccount(caller, accountId);
  const window = await asBadRequest(() => parseWindowQuery(rawQuery));
  return services.reader.resourceTypes(scopeOf(services.tables, caller, accountId), window);
}

/** Takes a batch of usage events (account admins) once durably stored; an id already used for another event is a 409. */
export async function ingestUsageEvents(pg: Pool, caller: Caller, accountId: string, body: Buffer): Promise<AcceptResult> {
  memberAccount(caller, accountId);
  if (!caller.accountAdmin) throw forbidden('ingesting usage events is reserved to account admins');
  // Prices first, so that parsing and encoding run with no await between them (which
  // acceptUsageEvents, given parsed events, cannot offer): no event object outlives them.
  const prices = await loadPrices(pg, accountId);
  const batch = await asBadRequest(() => encodeUsageBody(accountId, body, Date.now(), prices));
  try {
    return await asBadRequest(() => acceptUsageBatch(pg, batch));
  } catch (err) {
    if (err instanceof UsageConflict) throw new ApiError(409, 'conflict', err.message, { index: err.index, field: 'id' });
    throw err;
  }
}
