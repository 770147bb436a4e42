import { badRequest } from '../errors';

/**
 * `{sandbox_url}/port/{port}/...`: a request for a program listening on a port inside the sandbox.
 * The sandbox gateway serves these paths itself (through the sandbox's forwarder for that port),
 * before anything reaches the sandbox's API.
 */
export interface PortTarget {
  port: number;
  /** What follows `/port/{port}`, path and query as sent; `/` when nothing does. */
  path: string;
}

const PORT_PATH = /^\/port(?:\/([^/]*))?(\/.*)?$/;
const PORT_TEXT = /^[0-9]{1,5}$/;

/**
 * The port and path a sandbox request names (`rest`: the path after the sandbox's address, as
 * sent; `query` without its `?`), or undefined when it is no /port path. A port that is not a
 * number from 1 to 65535 is a 400 naming the field.
 */
export function portTarget(rest: string, query: string): PortTarget | undefined {
  const match = PORT_PATH.exec(rest);
  if (!match) return undefined;
  const text = match[1] ?? '';
  const port = PORT_TEXT.test(text) ? Number(text) : NaN;
  if (!(port >= 1 && port <= 65535)) throw badRequest(`port must be an integer from 1 to 65535, got '${text.slice(0, 32)}'`);
  return { port, path: (match[2] ?? '/') + (query ? `?${query}` : '') };
}
