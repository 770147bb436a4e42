import { call } from './client';
import type { Credentials } from './credentials';
import { CommandError } from './errors';

/** The address of a sandbox's own API (its metadata.url), without a trailing slash. */
export async function sandboxUrl(credentials: Credentials, name: string): Promise<string> {
  const sandbox = await call<{ metadata?: { url?: string } }>(credentials, 'GET', `/v0/sandboxes/${encodeURIComponent(name)}`);
  const url = sandbox.metadata?.url;
  if (!url) throw new CommandError(`sandbox '${name}' has no address yet: see hangar get sandboxes ${name}`);
  return url.replace(/\/+$/, '');
}
