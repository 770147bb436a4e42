import type { Readable } from 'node:stream';
import type { Credentials } from './credentials';
import { CommandError } from './errors';

/** A call to the API that answered; `json` is the body parsed (or its text when not JSON). */
export interface ApiAnswer {
  status: number;
  json: unknown;
}

/** A body sent as bytes rather than JSON: a bundle, a build context, a file. */
export interface RawBody {
  bytes: Buffer | Readable | ReadableStream<Uint8Array>;
  contentType: string;
}

const isRaw = (body: unknown): body is RawBody => typeof body === 'object' && body !== null && 'bytes' in body && 'contentType' in body;

/** The address of `url`: absolute as given (a sandbox's own API), else under the credentials' base URL. */
export const apiTarget = (credentials: Credentials, url: string) => (/^https?:\/\//.test(url) ? url : `${credentials.url}${url}`);

/** The headers every call carries: the key and the workspace. */
export const authHeaders = (credentials: Credentials): Record<string, string> => ({ authorization: `Bearer ${credentials.apiKey}`, 'x-service-workspace': credentials.workspace });

/**
 * One HTTP call with the credentials' key and workspace, its body JSON or raw bytes (a stream is
 * sent as it is read); a network failure becomes a CommandError. `accept` asks for another answer
 * than JSON, whose body the caller then reads from `response`.
 */
export async function send(credentials: Credentials, method: string, url: string, body?: unknown, extraHeaders: Record<string, string> = {}): Promise<Response> {
  const headers: Record<string, string> = { ...authHeaders(credentials), ...extraHeaders };
  let payload: RequestInit['body'];
  if (isRaw(body)) {
    headers['content-type'] = body.contentType;
    payload = Buffer.isBuffer(body.bytes) ? new Uint8Array(body.bytes) : (body.bytes as RequestInit['body']);
  } else if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  try {
    // duplex 'half': a streamed body goes out while it is read.
    return await fetch(apiTarget(credentials, url), { method, headers, body: payload, duplex: 'half' } as RequestInit);
  } catch (err) {
    const cause = (err as { cause?: Error }).cause?.message;
    throw new CommandError(`cannot reach ${credentials.url} (${cause ?? (err as Error).message}): check --url or HANGAR_URL, and that the platform is running`);
  }
}

/** One call whose answer is read whole (JSON, or its text when not JSON). */
export async function request(credentials: Credentials, method: string, url: string, body?: unknown): Promise<ApiAnswer> {
  const response = await send(credentials, method, url, body);
  const text = await response.text();
  try {
    return { status: response.status, json: text ? JSON.parse(text) : null };
  } catch {
    return { status: response.status, json: text };
  }
}

/** The API's own sentence for a failed call, so the user sees what the API said (a sandbox's API says it as `error`). */
export function apiMessage(answer: ApiAnswer): string {
  const body = answer.json as { message?: unknown; error?: unknown } | string | null;
  if (body && typeof body === 'object' && typeof body.message === 'string') return body.message;
  if (body && typeof body === 'object' && typeof body.error === 'string') return body.error;
  return typeof body === 'string' && body ? body : `HTTP ${answer.status}`;
}

/** What to do about a refusal whose API message may not say it. */
function hint(status: number): string {
  return status === 401 ? ' (run hangar login with a valid key)' : '';
}

/** The CommandError for a call that did not answer 2xx, with the API's message. */
export function refusal(method: string, url: string, answer: ApiAnswer): CommandError {
  return new CommandError(`${method} ${url}: ${answer.status} ${apiMessage(answer)}${hint(answer.status)}`);
}

/** The body of a call that must answer 2xx; anything else is a CommandError with the API's message. */
export async function call<T = unknown>(credentials: Credentials, method: string, url: string, body?: unknown): Promise<T> {
  const answer = await request(credentials, method, url, body);
  if (answer.status < 200 || answer.status > 299) throw refusal(method, url, answer);
  return answer.json as T;
}
