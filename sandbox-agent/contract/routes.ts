/**
 * Every route of the sandbox agent, and who may call it. `public` routes are the sandbox API
 * that a workspace's members reach through the sandbox gateway. `internal` routes serve the node
 * that runs the sandbox (idleness, handing a pre-started sandbox over, port forwarding for a
 * workload): only the host calls them, over the sandbox's socket, and the gateway answers 404
 * for them however their path is spelt. This table is the one place that says which is which.
 *
 * Paths use `{placeholders}` for one segment; `{path}` stands for a file path of any depth.
 * `*` as the method: any method.
 */
export type RouteAccess = 'public' | 'internal';

export interface AgentRoute {
  method: string;
  path: string;
  access: RouteAccess;
}

export const AGENT_ROUTES: readonly AgentRoute[] = [
  { method: 'GET', path: '/', access: 'public' },
  { method: 'HEAD', path: '/', access: 'public' },
  { method: 'GET', path: '/health', access: 'public' },
  { method: 'GET', path: '/filesystem/{path}', access: 'public' },
  { method: 'HEAD', path: '/filesystem/{path}', access: 'public' },
  { method: 'PUT', path: '/filesystem/{path}', access: 'public' },
  { method: 'POST', path: '/filesystem/{path}', access: 'public' },
  { method: 'DELETE', path: '/filesystem/{path}', access: 'public' },
  { method: 'GET', path: '/filesystem/tree/{path}', access: 'public' },
  { method: 'POST', path: '/process', access: 'public' },
  { method: 'GET', path: '/process', access: 'public' },
  { method: 'GET', path: '/process/{process}', access: 'public' },
  { method: 'DELETE', path: '/process/{process}', access: 'public' },
  { method: 'POST', path: '/process/{process}/kill', access: 'public' },
  { method: 'DELETE', path: '/process/{process}/kill', access: 'public' },
  { method: 'GET', path: '/process/{process}/logs', access: 'public' },
  { method: 'GET', path: '/process/{process}/logs/stream', access: 'public' },
  { method: 'GET', path: '/network/process/{pid}/ports', access: 'public' },
  { method: 'POST', path: '/network/process/{pid}/monitor', access: 'public' },
  { method: 'DELETE', path: '/network/process/{pid}/monitor', access: 'public' },
  { method: '*', path: '/mcp', access: 'public' },
  { method: 'POST', path: '/network/forward', access: 'internal' },
  { method: 'GET', path: '/internal/activity', access: 'internal' },
  { method: 'POST', path: '/internal/reload', access: 'internal' },
];

/** The public paths, each once, as the API's root lists them. */
export function publicEndpoints(): string[] {
  return [...new Set(AGENT_ROUTES.filter((route) => route.access === 'public' && route.path !== '/').map((route) => route.path))];
}

const segmentsOf = (path: string) => path.split('/').filter(Boolean);

/** Whether `segments` begin with a route's, a `{placeholder}` standing for any one segment. */
const startsWithRoute = (segments: string[], route: string[]) =>
  route.length <= segments.length && route.every((step, i) => step === segments[i] || /^\{.+\}$/.test(step));

const ROUTE_PATHS = [...new Set(AGENT_ROUTES.map((route) => route.path))].map(segmentsOf);

function matchesRoute(segments: string[], route: string[]): boolean {
  if (route.at(-1) === '{path}') return startsWithRoute(segments, route.slice(0, -1));
  return segments.length === route.length && startsWithRoute(segments, route);
}

/**
 * Whether the agent serves a path (as sent, without its query), whatever the method; a trailing
 * slash is allowed. The agent answers 404 for any other, so it serves nothing this table lacks.
 */
export function isListedPath(pathname: string): boolean {
  const segments = pathname.split('/').slice(1);
  if (segments.at(-1) === '') segments.pop();
  return ROUTE_PATHS.some((route) => matchesRoute(segments, route));
}

const INTERNAL_PATHS = AGENT_ROUTES.filter((route) => route.access === 'internal').map((route) => segmentsOf(route.path.toLowerCase()));

/** Percent-escapes of ASCII characters, decoded again and again (`%2569` -> `%69` -> `i`). */
function decodeAsciiEscapes(text: string): string {
  for (let round = 0; round < 8; round++) {
    const decoded = text.replace(/%([0-7][0-9a-f])/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (decoded === text) return text;
    text = decoded;
  }
  return text;
}

/**
 * The segments a path could be read as, by any server along the way: escapes decoded, case
 * folded, `\` as a separator, empty and `.` segments and `;parameters` dropped; once with `..`
 * resolved and once with it kept as it is.
 */
function readings(rawPath: string): string[][] {
  const parts = decodeAsciiEscapes(rawPath)
    .toLowerCase()
    .split(/[/\\]/)
    .map((segment) => segment.split(';')[0])
    .filter((segment) => segment !== '' && segment !== '.');
  const resolved: string[] = [];
  for (const part of parts) {
    if (part === '..') resolved.pop();
    else resolved.push(part);
  }
  return [parts, resolved];
}

/**
 * Whether a request path (as sent, before any decoding; a query string is ignored) names an
 * internal route or something under one, in any spelling. A path that only might is refused
 * too: no public route looks like one.
 */
export function reachesInternalRoute(rawPath: string): boolean {
  const pathOnly = rawPath.split(/[?#]/)[0];
  return readings(pathOnly).some((segments) => INTERNAL_PATHS.some((route) => startsWithRoute(segments, route)));
}
