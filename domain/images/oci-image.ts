/**
 * The parts of an OCI image layout a node reads: the index names the manifest, the manifest
 * names the config and the layers, the config says how the image expects to be run. Only the
 * documents' text goes in here; reading the files is the runtime's.
 */
export interface OciDescriptor {
  mediaType: string;
  digest: string;
  size: number;
}

export interface OciManifest {
  config: OciDescriptor;
  layers: OciDescriptor[];
}

/** What an image's config asks of the processes run from it. */
export interface ImageRunConfig {
  /** `Env`, in order, as name and value; entries without '=' are dropped, a repeated name keeps its last value. */
  env: [string, string][];
  workingDir?: string;
  user?: string;
  entrypoint: string[];
  cmd: string[];
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** A malformed document of an image; the message says which one and what is wrong. */
export class OciDocumentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OciDocumentError';
  }
}

function parseJson(text: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new OciDocumentError(`the image's ${what} is not JSON`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new OciDocumentError(`the image's ${what} is not a JSON object`);
  return value as Record<string, unknown>;
}

function descriptor(value: unknown, what: string): OciDescriptor {
  const d = value as Partial<OciDescriptor> | null;
  if (!d || typeof d !== 'object' || typeof d.digest !== 'string' || !DIGEST.test(d.digest) || typeof d.size !== 'number') {
    throw new OciDocumentError(`the image's ${what} has no valid sha256 descriptor`);
  }
  return { mediaType: String(d.mediaType ?? ''), digest: d.digest, size: d.size };
}

/** The manifest an index.json tags with `tag` (`org.opencontainers.image.ref.name`). */
export function manifestOfIndex(text: string, tag: string): OciDescriptor {
  const index = parseJson(text, 'index');
  const manifests = Array.isArray(index.manifests) ? index.manifests : [];
  const entry = manifests.find((m: { annotations?: Record<string, string> }) => m?.annotations?.['org.opencontainers.image.ref.name'] === tag);
  if (!entry) throw new OciDocumentError(`the image's index has no manifest tagged '${tag}'`);
  return descriptor(entry, 'index entry');
}

export function parseManifest(text: string): OciManifest {
  const manifest = parseJson(text, 'manifest');
  if (!Array.isArray(manifest.layers)) throw new OciDocumentError("the image's manifest has no layers list");
  return { config: descriptor(manifest.config, 'manifest config'), layers: manifest.layers.map((layer, i) => descriptor(layer, `layer ${i}`)) };
}

const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);
const nonEmpty = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/** The run settings of an image config (`config.Env`, `WorkingDir`, `User`, `Entrypoint`, `Cmd`). */
export function parseImageConfig(text: string): ImageRunConfig {
  const document = parseJson(text, 'config');
  const config = (typeof document.config === 'object' && document.config !== null ? document.config : {}) as Record<string, unknown>;
  const env = new Map<string, string>();
  for (const entry of strings(config.Env)) {
    const eq = entry.indexOf('=');
    if (eq > 0) env.set(entry.slice(0, eq), entry.slice(eq + 1));
  }
  const workingDir = nonEmpty(config.WorkingDir);
  const user = nonEmpty(config.User);
  return {
    env: [...env],
    ...(workingDir ? { workingDir } : {}),
    ...(user ? { user } : {}),
    entrypoint: strings(config.Entrypoint),
    cmd: strings(config.Cmd),
  };
}

/** The environment of a sandbox's processes: the platform's defaults, then the image's `Env`, then the sandbox's own variables, each winning over the ones before. */
export function processEnvironment(
  defaults: Record<string, string>,
  imageEnv: [string, string][],
  own: Record<string, string>,
): Record<string, string> {
  return { ...defaults, ...Object.fromEntries(imageEnv), ...own };
}

/** The platform an image index is resolved for: the node's own, in OCI's words (`linux`, `amd64`). */
export interface OciPlatform {
  os: string;
  architecture: string;
}

/** Node's `process.arch` in OCI's (Go's) architecture names; others are the same word. */
const OCI_ARCHITECTURES: Record<string, string> = { x64: 'amd64', ia32: '386', ppc64: 'ppc64le' };

export function ociPlatform(nodeArch: string, os = 'linux'): OciPlatform {
  return { os, architecture: OCI_ARCHITECTURES[nodeArch] ?? nodeArch };
}

/** What a pull will fetch, read from the manifest before the copy: the layers' compressed bytes and their count. */
export interface PullTotals {
  bytesTotal: number;
  layersTotal: number;
  layers: OciDescriptor[];
}

/**
 * A registry's answer for a reference (`skopeo inspect --raw`): an image manifest gives the
 * pull's totals; an index (OCI's, or Docker's manifest list) gives the digest of the manifest
 * for `platform`, which is what skopeo copies, to be read next.
 */
export function pullTotalsOf(text: string, platform: OciPlatform): { totals: PullTotals } | { manifest: string } {
  const document = parseJson(text, 'manifest');
  if (Array.isArray(document.manifests)) {
    const entries = document.manifests as { digest?: unknown; platform?: { os?: unknown; architecture?: unknown } }[];
    const entry = entries.find((m) => m?.platform?.os === platform.os && m.platform.architecture === platform.architecture);
    if (!entry) throw new OciDocumentError(`the image's index has no manifest for ${platform.os}/${platform.architecture}`);
    return { manifest: descriptor(entry, 'index entry').digest };
  }
  const { layers } = parseManifest(text);
  return { totals: { bytesTotal: layers.reduce((sum, layer) => sum + layer.size, 0), layersTotal: layers.length, layers } };
}
