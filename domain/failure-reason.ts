/**
 * The innermost message of a failure chain (an activity failure wraps the application failure
 * that wraps the error thrown on the worker): the reason a user should read.
 */
export function failureReason(err: unknown): string {
  let current = err as { message?: string; cause?: unknown } | undefined;
  let message = current?.message ?? String(err);
  while (current?.cause) {
    current = current.cause as { message?: string; cause?: unknown };
    if (current.message) message = current.message;
  }
  return message;
}
