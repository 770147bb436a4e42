/**
 * Whether an error means that a backing service (PostgreSQL, ClickHouse, Temporal) cannot be
 * reached right now, as while `npm start` restarts one, rather than that anything is wrong with
 * the request or the platform. Such a request deserves a 503 its client may retry, not a 500.
 */
const SOCKET_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND']);
/** PostgreSQL's class 57 of errors that end a connection: admin_shutdown, crash_shutdown, cannot_connect_now. */
const POSTGRES_SHUTDOWN = new Set(['57P01', '57P02', '57P03']);
/** gRPC's UNAVAILABLE, as Temporal's client reports an unreachable server. */
const GRPC_UNAVAILABLE = 14;
/** What pg says of a connection that ended under a statement, or of using one that had. */
const POSTGRES_CONNECTION_LOST = /^Connection terminated|connection error and is not queryable/;

export function isBackendUnavailable(err: unknown): boolean {
  // Wrapped errors (Temporal's ServiceError, an activity's failure) keep the cause underneath.
  for (let current = err, depth = 0; current && depth < 5; current = (current as { cause?: unknown }).cause, depth++) {
    const { code, message } = current as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (SOCKET_ERRORS.has(code) || POSTGRES_SHUTDOWN.has(code))) return true;
    if (code === GRPC_UNAVAILABLE) return true;
    if (typeof message === 'string' && POSTGRES_CONNECTION_LOST.test(message)) return true;
  }
  return false;
}
