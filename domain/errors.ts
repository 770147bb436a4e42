/**
 * The one error type route handlers throw. The error-handler plugin turns it into
 * `{"error": code, "message": message}` with the given status; nothing else reaches a client.
 */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    /** Extra fields merged into the body, e.g. `{index: 3, field: 'quantity'}`. */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const badRequest = (message: string, details?: Record<string, unknown>) =>
  new ApiError(400, 'bad_request', message, details);
export const unauthorized = (message = 'a valid bearer token is required') => new ApiError(401, 'unauthorized', message);
export const forbidden = (message = 'access denied') => new ApiError(403, 'access_denied', message);
export const notFound = (message: string) => new ApiError(404, 'not_found', message);
// Clients of peer services read the numeric `code` of a conflict, so it is kept beside `error`.
export const conflict = (message: string) => new ApiError(409, 'conflict', message, { code: 409 });
