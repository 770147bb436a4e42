import { ROUTES_CHANNEL } from '../domain/resource';
import type { Queryable } from './transaction';

/**
 * Tells every gateway to drop what it cached under these route keys (a resource id, or a custom
 * domain's host key: a host looked up before it was claimed is cached as unknown).
 */
export async function announceRouteChanges(db: Queryable, ...keys: string[]): Promise<void> {
  for (const key of keys) await db.query('SELECT pg_notify($1, $2)', [ROUTES_CHANNEL, key]);
}
