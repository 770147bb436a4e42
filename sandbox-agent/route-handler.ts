import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AgentOperation } from './contract/routes';

/** What a handler gets of its request besides the request itself. */
export interface RouteContext {
  /** The route's `{placeholders}`, as sent (still percent-encoded). */
  params: Record<string, string>;
  query: URLSearchParams;
}

export type RouteHandler = (req: IncomingMessage, res: ServerResponse, context: RouteContext) => Promise<void>;

/** Handlers for some of the contract's operations; the server joins them into one for every operation. */
export type RouteHandlers<Operation extends AgentOperation> = Record<Operation, RouteHandler>;
