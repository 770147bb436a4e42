import { hash } from 'node:crypto';
import { parseDurationSeconds } from '../duration';

/**
 * A preview: a URL on the preview host that reaches one port of a sandbox without the caller
 * holding an API key, either for anyone (public) or for holders of one of its tokens (private).
 * Port 443 means the sandbox's own API (the reference's sessions are such previews): a process
 * inside cannot listen on a port below 1024 (it has no capabilities), so it names nothing else.
 */
export interface PreviewSpec {
  port: number;
  public: boolean;
  prefixUrl?: string;
  requestHeaders?: Record<string, string>;
  responseHeaders?: Record<string, string>;
  ttl?: string;
  expires?: string;
}

/** The port that stands for the sandbox API itself rather than a port a process listens on. */
export const SANDBOX_API_PORT = 443;

/** Header and query parameters carrying a private preview's token (the query's two spellings: ours and the reference's). */
export const PREVIEW_TOKEN_HEADER = 'x-service-preview-token';
export const PREVIEW_TOKEN_QUERY_PARAMETERS = ['preview_token', 'bl_preview_token'] as const;

/** When a preview stops serving: its absolute `expires`, else `ttl` after its creation; never when neither is set. */
export function previewExpiresAt(spec: Pick<PreviewSpec, 'ttl' | 'expires'>, createdAt: Date): Date | undefined {
  if (spec.expires !== undefined) return new Date(spec.expires);
  if (spec.ttl === undefined) return undefined;
  const seconds = parseDurationSeconds(spec.ttl);
  return seconds === undefined ? undefined : new Date(createdAt.getTime() + seconds * 1000);
}

/**
 * The label naming a preview in its URL (`{preview_id}` of the preview URL template): with a
 * prefix, the prefix and the workspace (`my-app-acme`), as the reference spells it, so two
 * workspaces never claim the same one; without, `random` (unguessable).
 */
export function previewLabel(prefixUrl: string | undefined, workspace: string, random: string): string {
  return prefixUrl ? `${prefixUrl}-${workspace}` : random;
}

/** Problems with a spec the schema cannot see, as a message naming the field; undefined when fine. */
export function previewSpecProblem(spec: PreviewSpec, now: number): string | undefined {
  // Anyone holding a public URL of the sandbox API could run commands in it: it takes a token.
  if (spec.port === SANDBOX_API_PORT && spec.public) return `body.spec.public: port ${SANDBOX_API_PORT} is the sandbox API, which is previewed privately only (with a token)`;
  if (spec.ttl !== undefined && spec.expires !== undefined) return 'body.spec.ttl and body.spec.expires are exclusive: give one expiry';
  if (spec.expires !== undefined) {
    const at = Date.parse(spec.expires);
    if (Number.isNaN(at)) return `body.spec.expires '${spec.expires}' is not an RFC 3339 date-time`;
    if (at <= now) return `body.spec.expires '${spec.expires}' is in the past`;
  }
  for (const field of ['requestHeaders', 'responseHeaders'] as const) {
    for (const [name, value] of Object.entries(spec[field] ?? {})) {
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) return `body.spec.${field}: '${name}' is not a header name`;
      // What HTTP allows in a value: no line breaks or other control characters.
      if (/[^\t\x20-\x7e\x80-\xff]/.test(value)) return `body.spec.${field}.${name}: the value holds a character a header cannot carry`;
    }
  }
  return undefined;
}

/** The headers a CORS preflight is answered with when the preview says nothing else. */
const DEFAULT_PREFLIGHT: Record<string, string> = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'GET, POST, PUT, DELETE, OPTIONS, PATCH, HEAD',
  'access-control-allow-headers': 'Content-Type, Authorization, X-Service-Preview-Token',
  'access-control-max-age': '86400',
};

/**
 * The answer to a CORS preflight on a preview: the defaults, with the preview's own response
 * headers over them (its Access-Control-* values replace the defaults', as the reference does).
 */
export function preflightHeaders(responseHeaders: Record<string, string> | undefined): Record<string, string> {
  const headers = { ...DEFAULT_PREFLIGHT };
  for (const [name, value] of Object.entries(responseHeaders ?? {})) headers[name.toLowerCase()] = value;
  return headers;
}

/** A CORS preflight: an OPTIONS request naming the method a browser means to send. */
export function isPreflight(method: string, headers: Record<string, string | string[] | undefined>): boolean {
  return method === 'OPTIONS' && typeof headers.origin === 'string' && typeof headers['access-control-request-method'] === 'string';
}

/**
 * Where previews live: the configured template, or by default `/_previews/{preview_id}` on the
 * origin of the sandbox URLs (the sandbox gateway's listener; no workspace name starts with `_`,
 * so the two never meet). A host-based sandbox template wants a preview template of its own.
 */
export function previewUrlTemplate(config: { previewUrlTemplate?: string; sandboxUrlTemplate: string }): string {
  if (config.previewUrlTemplate) return config.previewUrlTemplate;
  const origin = /^[a-z][a-z0-9+.-]*:\/\/[^/]+/i.exec(config.sandboxUrlTemplate)?.[0] ?? '';
  return `${origin}/_previews/{preview_id}`;
}

/** The digest a token is found by: the store keeps the value only sealed, the gateway never keeps it. */
export function previewTokenDigest(value: string): string {
  return hash('sha256', value, 'base64url');
}
