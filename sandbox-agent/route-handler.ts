import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
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

/**
 * Serves an HTTP upgrade (WebSocket) on a route of the contract: the connection is the handler's
 * from here, `head` the bytes the client sent after its request. It throws (an HttpError) to
 * refuse before taking it. Routes without one refuse upgrades.
 */
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer, context: RouteContext) => void;
