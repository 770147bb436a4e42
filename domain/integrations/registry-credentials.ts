import { parseImageReference } from '../images/reference';

/** A registry's account, as the node's pull hands it to skopeo (through a file of the pull's own). */
export interface RegistryAccount {
  username: string;
  password: string;
}

/**
 * The account an `oci-registry` connection's secrets hold for `image`, or why they cannot be used
 * for it: credentials go only to the registry the connection names, so a sandbox cannot send a
 * workspace's password to a host of its choosing.
 */
export function registryAccountFor(connection: string, secrets: Record<string, string>, image: string): RegistryAccount | { problem: string } {
  const registry = parseImageReference(image).registry;
  if (secrets.REGISTRY !== registry) {
    return { problem: `integration connection '${connection}' holds credentials for registry '${secrets.REGISTRY}', not for '${registry ?? 'none'}' of image '${image}'` };
  }
  if (!secrets.USERNAME || !secrets.PASSWORD) return { problem: `integration connection '${connection}' lacks USERNAME or PASSWORD` };
  return { username: secrets.USERNAME, password: secrets.PASSWORD };
}
