import type { Credentials } from './credentials';
import { CommandError } from './errors';

/** A call to the API that answered; `json` is the body parsed (or its text when not JSON). */
export interface ApiAnswer {
  status: number;
  json: unknown;
}

/** One HTTP call with the credentials' key and workspace; a network failure becomes a CommandError. */
export async function request(credentials: Credentials, method: string, url: string, body?: unknown): Promise<ApiAnswer> {
  const target = /^https?:\/\//.test(url) ? url : `${credentials.url}${url}`;
  let response: Response;
  try {
    response = await fetch(target, {
      method,
      headers: {
        authorization: `Bearer ${credentials.apiKey}`,
        'x-service-workspace': credentials.workspace,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new CommandError(`cannot reach ${credentials.url} (${(err as Error).message}): check --url or HANGAR_URL`);
  }
  const text = await response.text();
  try {
    return { status: response.status, json: text ? JSON.parse(text) : null };
  } catch {
    return { status: response.status, json: text };
  }
}

/** The API's own sentence for a failed call, so the user sees what the API said. */
export function apiMessage(answer: ApiAnswer): string {
  const body = answer.json as { message?: unknown; error?: unknown } | string | null;
  if (body && typeof body === 'object' && typeof body.message === 'string') return body.message;
  return typeof body === 'string' && body ? body : `HTTP ${answer.status}`;
}

/** The body of a call that must answer 2xx; anything else is a CommandError with the API's message. */
export async function call<T = unknown>(credentials: Credentials, method: string, url: string, body?: unknown): Promise<T> {
  const answer = await request(credentials, method, url, body);
  if (answer.status < 200 || answer.status > 299) {
    const hint = answer.status === 401 ? ' (run hangar login with a valid key)' : '';
    throw new CommandError(`${method} ${url}: ${answer.status} ${apiMessage(answer)}${hint}`);
  }
  return answer.json as T;
}
