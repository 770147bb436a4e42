import fsp from 'node:fs/promises';
import path from 'node:path';
import { ImagePullError, pullFailure } from '../domain/images/pull-failure';
import { canonicalImageReference, isLoopbackRegistry, type ImageReference } from '../domain/images/reference';
import { runImageTool } from './image-tools';

/** A registry account: used for one pull, written only to a file of the pull's own (mode 0600), never on a command line. */
export interface RegistryCredentials {
  username: string;
  password: string;
}

export interface SkopeoCopy {
  /** The reference as the caller wrote it (for messages) and as skopeo reads it (every part spelt out). */
  reference: string;
  canonical: string;
  parsed: ImageReference & { registry: string };
  /** An OCI layout folder and the tag the image gets in it. */
  layoutDir: string;
  tag: string;
  /** A private folder for this copy's credentials and temporary files; the caller removes it. */
  workDir: string;
  /** Signature policy: what the store accepts (see OciImageStore). */
  policyFile: string;
  credentials?: RegistryCredentials;
  /** Registries reached over plain HTTP or without certificate checks besides loopback ones. */
  insecureRegistries: string[];
  skopeoPath: string;
}

/**
 * How skopeo reaches the image's registry, as `<prefix>tls-verify`, `<prefix>authfile` and
 * `<prefix>no-creds` (`--src-` for a copy, none for an inspect). Anonymous unless credentials are
 * given: skopeo is told to read no account of the host's, so a pull never borrows the operator's
 * logins; given ones go to a file of the pull's own folder.
 */
async function sourceArgs(copy: SkopeoCopy, prefix: '--src-' | '--'): Promise<string[]> {
  const registry = copy.parsed.registry;
  const insecure = isLoopbackRegistry(registry) || copy.insecureRegistries.includes(registry);
  const args = [`${prefix}tls-verify=${insecure ? 'false' : 'true'}`];
  if (!copy.credentials) return [...args, `${prefix}no-creds`];
  const authFile = path.join(copy.workDir, 'auth.json');
  const auth = Buffer.from(`${copy.credentials.username}:${copy.credentials.password}`).toString('base64');
  await fsp.writeFile(authFile, JSON.stringify({ auths: { [registry]: { auth } } }), { mode: 0o600 });
  return [...args, `${prefix}authfile`, authFile];
}

/** Copies an image from its registry into an OCI layout with skopeo. A failure throws an ImagePullError with skopeo's reason. */
export async function copyFromRegistry(copy: SkopeoCopy): Promise<void> {
  const args = ['--policy', copy.policyFile, 'copy', '--quiet', ...(await sourceArgs(copy, '--src-'))];
  args.push(`docker://${copy.canonical}`, `oci:${copy.layoutDir}:${copy.tag}`);
  const result = await runImageTool(copy.skopeoPath, args, { TMPDIR: copy.workDir, HOME: copy.workDir });
  if (result.code !== 0) throw new ImagePullError(copy.reference, pullFailure(result.stderr));
}

/**
 * The registry's manifest (or index) for the copy's reference, or for `digest` in its repository,
 * as the registry serves it (`skopeo inspect --raw`: no blob is fetched). Fails as a copy would.
 */
export async function registryManifest(copy: SkopeoCopy, digest?: string): Promise<string> {
  const source = digest === undefined ? copy.canonical : canonicalImageReference({ ...copy.parsed, tag: undefined, digest });
  const args = ['--policy', copy.policyFile, 'inspect', '--raw', ...(await sourceArgs(copy, '--')), `docker://${source}`];
  const result = await runImageTool(copy.skopeoPath, args, { TMPDIR: copy.workDir, HOME: copy.workDir }, { stdout: true });
  if (result.code !== 0) throw new ImagePullError(copy.reference, pullFailure(result.stderr));
  return result.stdout ?? '';
}
