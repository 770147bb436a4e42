/**
 * Image references as container tools write them, `[registry/][namespace/]name[:tag|@digest]`,
 * following the grammar of the OCI distribution reference (the one Docker, skopeo and registries
 * share): lowercase path components, an optional registry host (with a port), a tag of at most
 * 128 characters and a digest of a known algorithm.
 */
export interface ImageReference {
  /** The registry's host[:port] as written; absent when the reference names none. */
  registry?: string;
  /** The repository path inside the registry, `namespace/name` (`library/` is not added here). */
  repository: string;
  tag?: string;
  digest?: string;
}

/** A reference that breaks the grammar; the message names the reference and what is wrong with it. */
export class ImageReferenceError extends Error {
  constructor(
    readonly reference: string,
    reason: string,
  ) {
    super(`image reference '${reference}' is malformed: ${reason}`);
    this.name = 'ImageReferenceError';
  }
}

/** Where a reference without a registry is pulled from, as every container tool does. */
export const DEFAULT_REGISTRY = 'docker.io';

const MAX_NAME_LENGTH = 255;
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const HOST = new RegExp(`^(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[0-9a-fA-F:.]+\\])(?::[0-9]{1,5})?$`);
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DIGEST_HEX_LENGTH: Record<string, number> = { sha256: 64, sha512: 128 };

/** Parses a reference, or throws an ImageReferenceError saying what is wrong. */
export function parseImageReference(reference: string): ImageReference {
  const fail = (reason: string): never => {
    throw new ImageReferenceError(reference, reason);
  };
  if (typeof reference !== 'string' || reference.length === 0) return fail('it is empty');
  if (/\s/.test(reference)) fail('it contains white space');

  const at = reference.indexOf('@');
  const digest = at >= 0 ? reference.slice(at + 1) : undefined;
  const withoutDigest = at >= 0 ? reference.slice(0, at) : reference;
  if (digest !== undefined) checkDigest(digest, fail);

  // A ':' after the last '/' starts the tag; one before it belongs to the registry's port.
  const colon = withoutDigest.lastIndexOf(':');
  const hasTag = colon > withoutDigest.lastIndexOf('/');
  const name = hasTag ? withoutDigest.slice(0, colon) : withoutDigest;
  const tag = hasTag ? withoutDigest.slice(colon + 1) : undefined;
  if (tag !== undefined && !TAG.test(tag)) fail(`the tag '${tag}' must be 1-128 letters, digits, '_', '.' or '-', not starting with '.' or '-'`);
  if (name.length === 0) fail('the name is missing');
  if (name.length > MAX_NAME_LENGTH) fail(`the name is longer than ${MAX_NAME_LENGTH} characters`);

  const parts = name.split('/');
  const registry = parts.length > 1 && isRegistryHost(parts[0]) ? parts.shift() : undefined;
  if (registry !== undefined && !HOST.test(registry)) fail(`the registry '${registry}' is not a host name with an optional port`);
  for (const part of parts) {
    if (!PATH_COMPONENT.test(part)) {
      fail(part === '' ? 'a path component is empty' : `the path component '${part}' must be lowercase letters and digits, separated by '.', '_', '__' or dashes`);
    }
  }
  return { ...(registry !== undefined ? { registry } : {}), repository: parts.join('/'), ...(tag !== undefined ? { tag } : {}), ...(digest !== undefined ? { digest } : {}) };
}

/** Whether the first component of a name is a registry host: it has a dot or a port, or is localhost (the distribution rule). */
function isRegistryHost(component: string): boolean {
  return component.includes('.') || component.includes(':') || component === 'localhost' || component.startsWith('[');
}

function checkDigest(digest: string, fail: (reason: string) => never): void {
  const [algorithm, hex, ...rest] = digest.split(':');
  const length = DIGEST_HEX_LENGTH[algorithm];
  if (rest.length > 0 || hex === undefined || length === undefined) fail(`the digest '${digest}' must be sha256:<64 hex> or sha512:<128 hex>`);
  if (hex.length !== length || !/^[0-9a-f]+$/.test(hex)) fail(`the digest '${digest}' must have ${length} lowercase hexadecimal digits after '${algorithm}:'`);
}

/** The reference as written back from its parts (the inverse of the parse). */
export function formatImageReference(ref: ImageReference): string {
  return `${ref.registry ? `${ref.registry}/` : ''}${ref.repository}${ref.tag !== undefined ? `:${ref.tag}` : ''}${ref.digest !== undefined ? `@${ref.digest}` : ''}`;
}

/**
 * The reference with everything a registry needs spelt out: the default registry (with
 * `library/` for its one-component names, as Docker Hub has them), and the tag `latest` when
 * neither a tag nor a digest is given. A digest alone pins the content: a tag written beside it
 * is dropped, as registries resolve by the digest.
 */
export function canonicalImageReference(ref: ImageReference): string {
  const registry = ref.registry ?? DEFAULT_REGISTRY;
  const repository = registry === DEFAULT_REGISTRY && !ref.repository.includes('/') ? `library/${ref.repository}` : ref.repository;
  const version = ref.digest !== undefined ? `@${ref.digest}` : `:${ref.tag ?? 'latest'}`;
  return `${registry}/${repository}${version}`;
}

/** The registry's host without its port, for the loopback check and credentials. */
export function registryHostName(registry: string): string {
  if (registry.startsWith('[')) return registry.slice(1, registry.indexOf(']'));
  return registry.split(':')[0];
}

/**
 * Registries that are reached over plain HTTP or with an unverified certificate, as Docker allows
 * for loopback ones by default: only this machine can answer them.
 */
export function isLoopbackRegistry(registry: string): boolean {
  const host = registryHostName(registry).toLowerCase();
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}
