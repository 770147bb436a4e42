import type { IncomingMessage, ServerResponse } from 'node:http';

/** An error with the HTTP status it answers with; its message is safe to show the caller. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const badRequest = (message: string) => new HttpError(400, message);
export const notFound = (message: string) => new HttpError(404, message);

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

// Filesystem errors a caller can act on, and what they mean for them.
const ERRNO_STATUS: Record<string, number> = {
  ENOENT: 404,
  EACCES: 403,
  EPERM: 403,
  EROFS: 403,
  ENOTDIR: 400,
  EISDIR: 400,
  EEXIST: 409,
  ENOTEMPTY: 400,
  ENAMETOOLONG: 400,
  ELOOP: 400,
  ENOSPC: 507,
  EDQUOT: 507,
};

/** Every error leaves as `{"error": "..."}`; unexpected ones without internals. */
export function sendError(res: ServerResponse, err: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (err instanceof HttpError) return sendJson(res, err.status, { error: err.message });
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code && ERRNO_STATUS[code]) return sendJson(res, ERRNO_STATUS[code], { error: errnoMessage(err as NodeJS.ErrnoException) });
  process.stderr.write(`sandbox api: ${(err as Error)?.stack ?? String(err)}\n`);
  sendJson(res, 500, { error: `internal error: ${(err as Error)?.message ?? 'unknown'}` });
}

function errnoMessage(err: NodeJS.ErrnoException): string {
  const what: Record<string, string> = {
    ENOENT: 'no such file or directory',
    EACCES: 'permission denied',
    EPERM: 'operation not permitted',
    EROFS: 'read-only file system',
    ENOTDIR: 'not a directory',
    EISDIR: 'is a directory',
    EEXIST: 'already exists',
    ENOTEMPTY: 'directory not empty',
    ENAMETOOLONG: 'name too long',
    ELOOP: 'too many levels of symbolic links',
    ENOSPC: 'no space left on device',
    EDQUOT: 'disk quota exceeded',
  };
  return what[err.code!] ?? err.code!;
}

export async function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limitBytes) throw new HttpError(413, `request body larger than ${limitBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

const JSON_LIMIT = 32 * 1024 * 1024;

/** The request's JSON object body; `required` makes an empty body a 400. */
export async function readJsonObject(req: IncomingMessage, required: boolean): Promise<Record<string, unknown>> {
  const text = (await readBody(req, JSON_LIMIT)).toString('utf8').trim();
  if (!text) {
    if (required) throw badRequest('a JSON body is required');
    return {};
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest('the body is not valid JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badRequest('the body must be a JSON object');
  return value as Record<string, unknown>;
}

/** Field readers that name the field in their error. */
export const field = {
  optionalString(body: Record<string, unknown>, name: string): string | undefined {
    const value = body[name];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') throw badRequest(`'${name}' must be a string`);
    return value;
  },
  optionalBoolean(body: Record<string, unknown>, name: string): boolean | undefined {
    const value = body[name];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'boolean') throw badRequest(`'${name}' must be true or false`);
    return value;
  },
  optionalNumber(body: Record<string, unknown>, name: string, check: (n: number) => boolean, rule: string): number | undefined {
    const value = body[name];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'number' || !Number.isFinite(value) || !check(value)) throw badRequest(`'${name}' must be ${rule}`);
    return value;
  },
};

export function queryFlag(query: URLSearchParams, name: string): boolean {
  const value = query.get(name);
  if (value === null) return false;
  if (value === 'true' || value === '1' || value === '') return true;
  if (value === 'false' || value === '0') return false;
  throw badRequest(`query parameter '${name}' must be true or false`);
}

export function queryInt(query: URLSearchParams, name: string, fallback: number, min: number, max: number): number {
  const raw = query.get(name);
  if (raw === null || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) throw badRequest(`query parameter '${name}' must be an integer from ${min} to ${max}`);
  return Number(raw);
}

export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badRequest(`'${segment}' is not valid percent-encoding`);
  }
}
