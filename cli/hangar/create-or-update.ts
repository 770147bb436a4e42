import { apiMessage, request } from './client';
import type { Credentials } from './credentials';
import { CommandError } from './errors';

/** What apply and deploy send: a resource's metadata (its name at least) and spec. */
export interface ResourceBody {
  metadata: Record<string, unknown> & { name: string };
  spec?: unknown;
}

/**
 * Creates the resource under `/v0/<kindPath>`, or replaces it with PUT when its name is taken
 * (409). A refusal is a CommandError naming `<kindName>/<name>` with the API's message.
 */
export async function createOrUpdate(credentials: Credentials, kindPath: string, kindName: string, body: ResourceBody): Promise<{ action: 'created' | 'updated'; resource: unknown }> {
  const where = `${kindName}/${body.metadata.name}`;
  const created = await request(credentials, 'POST', `/v0/${kindPath}`, body);
  if (created.status >= 200 && created.status < 300) return { action: 'created', resource: created.json };
  if (created.status !== 409) throw new CommandError(`${where}: ${created.status} ${apiMessage(created)}`);
  const updated = await request(credentials, 'PUT', `/v0/${kindPath}/${encodeURIComponent(body.metadata.name)}`, body);
  if (updated.status < 200 || updated.status > 299) throw new CommandError(`${where}: ${updated.status} ${apiMessage(updated)}`);
  return { action: 'updated', resource: updated.json };
}
