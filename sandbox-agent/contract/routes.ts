import type { SchemaName } from './schemas';

/**
 * Every route of the sandbox agent, and who may call it. `public` routes are the sandbox API
 * that a workspace's members reach through the sandbox gateway. `internal` routes serve the node
 * that runs the sandbox (idleness, handing a pre-started sandbox over, port forwarding for a
 * workload): only the host calls them, over the sandbox's socket, and the gateway answers 404
 * for them however their path is spelt. This table is the one place that says which is which.
 *
 * Paths use `{placeholders}` for one segment; `{path}` stands for a file path of any depth.
 * `*` as the method: any method. HEAD has no rows: every GET route answers it (see matchRoute).
 */
export type RouteAccess = 'public' | 'internal';

/** A query parameter a route reads. */
export interface QueryParameter {
  name: string;
  type: 'boolean' | 'integer' | 'string';
  description: string;
}

/**
 * What a route answers with 200: JSON of a named schema (`[]`: a list of it), `lines` (plain
 * text streamed line by line), `file` (a file's JSON or its bytes), `mcp` (MCP messages) or
 * `websocket` (101, then JSON messages of the TerminalMessage schema both ways).
 */
export type RouteAnswer = SchemaName | `${SchemaName}[]` | 'lines' | 'file' | 'mcp' | 'websocket';

/** A row's method; never HEAD, which the GET row of the path serves. */
export type RouteMethod = 'GET' | 'PUT' | 'POST' | 'DELETE' | '*';

export interface AgentRoute {
  method: RouteMethod;
  path: string;
  access: RouteAccess;
  /** Its name: the operationId in the OpenAPI document. */
  operation: string;
  summary: string;
  /** The JSON body it reads, by its schema's name. */
  body?: SchemaName;
  query?: readonly QueryParameter[];
  answer: RouteAnswer;
}

const recursive: QueryParameter = { name: 'recursive', type: 'boolean', description: 'Delete a non-empty directory and everything in it.' };
const download: QueryParameter = { name: 'download', type: 'boolean', description: 'Answer the bytes (as does Accept: application/octet-stream).' };
const permissions: QueryParameter = { name: 'permissions', type: 'string', description: 'Octal mode of a file sent as raw bytes, for example 0644.' };
const partNumber: QueryParameter = { name: 'partNumber', type: 'integer', description: 'The part\'s place in the file (1-10000).' };
const treeBounds: readonly QueryParameter[] = [
  { name: 'depth', type: 'integer', description: 'Levels below the directory (1-64, default 8).' },
  { name: 'maxEntries', type: 'integer', description: 'Entries at most (1-100000, default 10000); a cut tree says truncated.' },
];

// Find, search, content search and watch: their query parameters, as the reference SDK sends them.
const maxResults = (fallback: number): QueryParameter => ({ name: 'maxResults', type: 'integer', description: `Results at most (default ${fallback}, at most 1000; 0: all).` });
const excludeDirs: QueryParameter = { name: 'excludeDirs', type: 'string', description: 'Comma-separated folder names not entered (default: node_modules,vendor,.git,dist,build,target,__pycache__,.venv,.next,coverage).' };
const excludeHidden: QueryParameter = { name: 'excludeHidden', type: 'boolean', description: 'Leave out names starting with a dot (default true).' };
const patterns: QueryParameter = { name: 'patterns', type: 'string', description: 'Comma-separated name globs a file must match (*, ?, [a-z], {a,b}).' };
const findQuery: readonly QueryParameter[] = [{ name: 'type', type: 'string', description: 'file (default) or directory.' }, patterns, maxResults(20), excludeDirs, excludeHidden];
const fuzzyQuery: readonly QueryParameter[] = [{ name: 'query', type: 'string', description: 'What to match (default: the path itself, as the reference reads it).' }, patterns, maxResults(20), excludeDirs, excludeHidden];
const contentQuery: readonly QueryParameter[] = [
  { name: 'query', type: 'string', description: 'The text to find (required; literal, not a pattern).' },
  { name: 'caseSensitive', type: 'boolean', description: 'Default false.' },
  { name: 'contextLines', type: 'integer', description: 'Lines of context each side of a match (0-20, default 0).' },
  maxResults(100),
  { name: 'filePattern', type: 'string', description: 'A glob a file\'s name must match, for example *.go.' },
  excludeDirs,
];
const watchIgnore: QueryParameter = { name: 'ignore', type: 'string', description: 'Comma-separated texts: events whose path contains one are not sent.' };
const terminalQuery: readonly QueryParameter[] = [
  { name: 'cols', type: 'integer', description: 'Columns (1-65535, default 80).' },
  { name: 'rows', type: 'integer', description: 'Rows (1-65535, default 24).' },
  { name: 'shell', type: 'string', description: 'The shell to run, an absolute path (default: bash, else sh).' },
  { name: 'workingDir', type: 'string', description: 'Folder it starts in; the sandbox\'s default folder when absent.' },
];

export const AGENT_ROUTES = [
  { method: 'GET', path: '/', access: 'public', operation: 'index', summary: 'The API\'s name, version and public paths', answer: 'ApiIndex' },
  { method: 'GET', path: '/health', access: 'public', operation: 'health', summary: 'Whether the sandbox API is up, and since when', answer: 'Health' },
  { method: 'GET', path: '/filesystem/{path}', access: 'public', operation: 'readFile', summary: 'Read a file (text or bytes) or list a directory', query: [download], answer: 'file' },
  { method: 'PUT', path: '/filesystem/{path}', access: 'public', operation: 'writeFile', summary: 'Write a file (JSON, multipart with a file part, or raw bytes) or create a directory', body: 'FileWrite', query: [permissions], answer: 'PathMessage' },
  { method: 'POST', path: '/filesystem/{path}', access: 'public', operation: 'writeFileByPost', summary: 'Write a file or create a directory (as PUT)', body: 'FileWrite', query: [permissions], answer: 'PathMessage' },
  { method: 'DELETE', path: '/filesystem/{path}', access: 'public', operation: 'deleteFile', summary: 'Delete a file or a directory', query: [recursive], answer: 'PathMessage' },
  { method: 'GET', path: '/filesystem/tree/{path}', access: 'public', operation: 'fileTree', summary: 'A directory\'s tree, bounded by depth and entry count', query: treeBounds, answer: 'DirectoryTree' },
  // Multipart upload and file trees (fs.write above 5 MB, fs.writeTree).
  { method: 'PUT', path: '/filesystem/tree/{path}', access: 'public', operation: 'writeTree', summary: 'Write several text files below a directory (created as needed); answers the directory', body: 'TreeRequest', answer: 'Directory' },
  { method: 'DELETE', path: '/filesystem/tree/{path}', access: 'public', operation: 'deleteTree', summary: 'Delete a directory (recursive=true: and everything in it)', query: [recursive], answer: 'PathMessage' },
  { method: 'GET', path: '/filesystem-multipart', access: 'public', operation: 'listMultipartUploads', summary: 'The multipart uploads in progress', answer: 'MultipartListUploadsResponse' },
  { method: 'POST', path: '/filesystem-multipart/initiate/{path}', access: 'public', operation: 'initiateMultipartUpload', summary: 'Start a multipart upload of a file', body: 'MultipartInitiateRequest', answer: 'MultipartInitiateResponse' },
  { method: 'PUT', path: '/filesystem-multipart/{uploadId}/part', access: 'public', operation: 'uploadMultipartPart', summary: 'Upload one part (multipart/form-data, a `file` part of at most 5 MiB); sending a part number again replaces it', query: [partNumber], answer: 'MultipartUploadPartResponse' },
  { method: 'POST', path: '/filesystem-multipart/{uploadId}/complete', access: 'public', operation: 'completeMultipartUpload', summary: 'Assemble the listed parts, in part-number order, into the file', body: 'MultipartCompleteRequest', answer: 'PathMessage' },
  { method: 'DELETE', path: '/filesystem-multipart/{uploadId}/abort', access: 'public', operation: 'abortMultipartUpload', summary: 'Abandon an upload and delete its parts', answer: 'PathMessage' },
  { method: 'GET', path: '/filesystem-multipart/{uploadId}/parts', access: 'public', operation: 'listMultipartParts', summary: 'The parts of an upload received so far', answer: 'MultipartListPartsResponse' },
  { method: 'POST', path: '/process', access: 'public', operation: 'startProcess', summary: 'Start a command; optionally wait until it ends or listens, or stream its output as NDJSON until it ends (Accept: application/x-ndjson or text/event-stream)', body: 'ProcessRequest', answer: 'Process' },
  { method: 'GET', path: '/process', access: 'public', operation: 'listProcesses', summary: 'The processes started through the API', answer: 'Process[]' },
  { method: 'GET', path: '/process/{process}', access: 'public', operation: 'getProcess', summary: 'One process, by pid or name', answer: 'Process' },
  { method: 'DELETE', path: '/process/{process}', access: 'public', operation: 'stopProcess', summary: 'Stop a process (SIGTERM, then SIGKILL after a grace period)', answer: 'Process' },
  { method: 'POST', path: '/process/{process}/kill', access: 'public', operation: 'killProcess', summary: 'Kill a process and all its descendants', answer: 'Process' },
  { method: 'DELETE', path: '/process/{process}/kill', access: 'public', operation: 'killProcessByDelete', summary: 'Kill a process and all its descendants (as POST)', answer: 'Process' },
  { method: 'GET', path: '/process/{process}/logs', access: 'public', operation: 'processLogs', summary: 'A process\'s output so far', answer: 'ProcessLogs' },
  { method: 'GET', path: '/process/{process}/logs/stream', access: 'public', operation: 'streamProcessLogs', summary: 'A process\'s output, line by line, until it ends', answer: 'lines' },
  // Process stdin (a process started with "stdin": true), as the reference SDK's process.writeStdin and closeStdin call it.
  { method: 'POST', path: '/process/{process}/stdin', access: 'public', operation: 'writeProcessStdin', summary: 'Write the raw body (application/octet-stream, at most 8 MiB) to the stdin of a process started with stdin: true; each body whole, in order', answer: 'StdinMessage' },
  { method: 'DELETE', path: '/process/{process}/stdin', access: 'public', operation: 'closeProcessStdin', summary: 'Close a process\'s stdin (EOF); closing again is fine', answer: 'StdinMessage' },
  // Terminal: an interactive shell on a PTY over WebSocket (sandbox-agent/terminal-routes.ts).
  { method: 'GET', path: '/terminal/ws', access: 'public', operation: 'terminal', summary: 'An interactive shell on a pseudo-terminal, over WebSocket (input and resize in, output out)', query: terminalQuery, answer: 'websocket' },
  { method: 'GET', path: '/network/process/{pid}/ports', access: 'public', operation: 'processPorts', summary: 'The sockets of a process and its descendants', answer: 'ProcessPorts' },
  { method: 'POST', path: '/network/process/{pid}/monitor', access: 'public', operation: 'startPortMonitor', summary: 'Call back for each port the process starts listening on', body: 'PortMonitorRequest', answer: 'PidMessage' },
  { method: 'DELETE', path: '/network/process/{pid}/monitor', access: 'public', operation: 'stopPortMonitor', summary: 'Stop a port monitor', answer: 'PidMessage' },
  // Find, fuzzy search, content search and watch, as the reference SDK's fs.find, fs.search, fs.grep and fs.watch call them.
  { method: 'GET', path: '/filesystem-find/{path}', access: 'public', operation: 'findFiles', summary: 'Files or directories below a folder, by type and name patterns', query: findQuery, answer: 'FindResponse' },
  { method: 'GET', path: '/filesystem-search/{path}', access: 'public', operation: 'fuzzySearch', summary: 'Files and directories whose relative path fuzzily matches a query, best first', query: fuzzyQuery, answer: 'FuzzySearchResponse' },
  { method: 'GET', path: '/filesystem-content-search/{path}', access: 'public', operation: 'contentSearch', summary: 'Lines of the files below a folder holding a text (ripgrep where the image has it)', query: contentQuery, answer: 'ContentSearchResponse' },
  { method: 'GET', path: '/watch/filesystem/{path}', access: 'public', operation: 'watchFiles', summary: 'Changes in a folder (below it too when the path ends in /**), one FileEvent JSON per line, until the caller leaves', query: [watchIgnore], answer: 'lines' },
  { method: '*', path: '/mcp', access: 'public', operation: 'mcp', summary: 'MCP over streamable HTTP: tools for files and processes', answer: 'mcp' },
  { method: 'POST', path: '/network/forward', access: 'internal', operation: 'forwardPort', summary: 'Forward a Unix socket to a port of the sandbox', body: 'PortForwardRequest', answer: 'PortForward' },
  { method: 'GET', path: '/internal/activity', access: 'internal', operation: 'activity', summary: 'Requests in flight and the last one\'s time', answer: 'Activity' },
  { method: 'POST', path: '/internal/reload', access: 'internal', operation: 'reload', summary: 'Read the configuration again (a fresh sandbox only)', answer: 'Reload' },
] as const satisfies readonly AgentRoute[];

/** A route of the table, its operation one of the table's names. */
export type ListedRoute = (typeof AGENT_ROUTES)[number];
export type AgentOperation = ListedRoute['operation'];

/** The public paths, each once, as the API's root lists them. */
export function publicEndpoints(): string[] {
  return [...new Set(publicRoutes().filter((route) => route.path !== '/').map((route) => route.path))];
}

/** The routes a workspace member reaches through the sandbox gateway. */
export function publicRoutes(): AgentRoute[] {
  return AGENT_ROUTES.filter((route) => route.access === 'public');
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

/** A request's route, and its path parameters as sent (still percent-encoded). */
export interface RouteMatch {
  route: ListedRoute;
  params: Record<string, string>;
}

/** Literal segments first: `/filesystem/tree/{path}` owns the paths below /filesystem/tree. */
const literalCount = (route: string[]) => route.filter((step) => !/^\{.+\}$/.test(step)).length;

/** The placeholders' values; `{path}` takes every segment left, joined again by slashes. */
function paramsOf(segments: string[], route: string[]): Record<string, string> {
  const params: Record<string, string> = {};
  route.forEach((step, i) => {
    const name = /^\{(.+)\}$/.exec(step)?.[1];
    if (name) params[name] = name === 'path' ? segments.slice(i).join('/') : segments[i];
  });
  return params;
}

/**
 * The route a request takes (path as sent, without its query; a trailing slash is allowed): the
 * most literal path pattern that matches, then the method (`*` for any; HEAD takes the GET route,
 * whose handler answers it with the GET's status and headers and no body). `undefined`: no route
 * has the path (404); `method-not-allowed`: the path is served, not with this method (405).
 */
export function matchRoute(method: string, pathname: string): RouteMatch | 'method-not-allowed' | undefined {
  const segments = pathname.split('/').slice(1);
  if (segments.at(-1) === '') segments.pop();
  const owners = ROUTE_PATHS.filter((route) => matchesRoute(segments, route));
  if (owners.length === 0) return undefined;
  const owner = owners.reduce((best, route) => (literalCount(route) > literalCount(best) ? route : best));
  const pattern = `/${owner.join('/')}`;
  const wanted = method === 'HEAD' ? 'GET' : method;
  const route = AGENT_ROUTES.find((candidate) => candidate.path === pattern && (candidate.method === wanted || candidate.method === '*'));
  if (!route) return 'method-not-allowed';
  // {path} keeps a trailing slash as sent, as the filesystem API always saw it.
  const raw = pathname.split('/').slice(1);
  return { route, params: paramsOf(owner.at(-1) === '{path}' ? raw : segments, owner) };
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

/** A route of the table by its operation name. */
export function routeOf(operation: AgentOperation): AgentRoute {
  return AGENT_ROUTES.find((route) => route.operation === operation)!;
}

/** The path of an operation with its `{placeholders}` filled (each value percent-encoded). */
export function routePath(operation: AgentOperation, params: Record<string, string | number> = {}): string {
  return routeOf(operation).path.replace(/\{(\w+)\}/g, (_, name: string) => {
    if (params[name] === undefined) throw new Error(`${operation}: no value for {${name}}`);
    return encodeURIComponent(String(params[name]));
  });
}
