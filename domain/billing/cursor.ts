import { createHash } from 'node:crypto';
import { InvalidInput } from './errors';
import type { MetricsQuery } from './metrics-query';

/**
 * Page cursors of endpoint 14: the key of the last group served plus a fingerprint of everything
 * that shapes the result (account, window, grouping, filters, page size and the caller's visible
 * workspaces). A cursor replayed with any other parameters no longer matches its fingerprint and
 * is refused. The key is only a position in the ordered groups, so a forged one reveals nothing
 * the same query could not already page through.
 */
interface CursorBody {
  v: 1;
  q: string;
  k: string[];
}

export function queryFingerprint(accountId: string, query: MetricsQuery, visibleWorkspaces: readonly string[] | undefined): string {
  const shape = [
    accountId,
    query.start,
    query.end,
    query.resolution,
    query.groupBy,
    [query.filters.workspace, query.filters.resourceType, query.filters.resourceName, query.filters.resourceUuid, query.filters.billingDimension],
    query.limit,
    visibleWorkspaces ?? null,
  ];
  return createHash('sha256').update(JSON.stringify(shape)).digest('base64url').slice(0, 22);
}

export function encodeCursor(fingerprint: string, lastKey: readonly string[]): string {
  const body: CursorBody = { v: 1, q: fingerprint, k: [...lastKey] };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

/** The last group key carried by `cursor`, after checking it belongs to this query. */
export function decodeCursor(cursor: string, fingerprint: string, keyLength: number): string[] {
  const invalid = () => new InvalidInput('cursor', 'cursor is invalid or was issued for a different query');
  if (!/^[A-Za-z0-9_-]{1,4096}$/.test(cursor)) throw invalid();
  let body: unknown;
  try {
    body = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  if (typeof body !== 'object' || body === null) throw invalid();
  const { v, q, k } = body as Partial<CursorBody>;
  if (v !== 1 || q !== fingerprint || !Array.isArray(k) || k.length !== keyLength || !k.every((part) => typeof part === 'string')) {
    throw invalid();
  }
  return k;
}
