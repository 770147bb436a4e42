/**
 * The two ways a command fails, with the exit codes scripts rely on: a usage mistake (2) and an
 * error of the API or of a resource (1). Both carry a sentence saying what to do.
 */
export class UsageError extends Error {
  readonly exitCode = 2;
}

export class CommandError extends Error {
  readonly exitCode = 1;
}
