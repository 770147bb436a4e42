// The agent's limits and defaults, apart from the schemas in filesystem.ts and process.ts: the
// agent itself loads only this module of them, which keeps each idle sandbox's memory down.

/** GET /filesystem/tree/{path}: how deep and how many entries, by default and at most. */
export const TREE_DEFAULT_DEPTH = 8;
export const TREE_MAX_DEPTH = 64;
export const TREE_DEFAULT_ENTRIES = 10_000;
export const TREE_MAX_ENTRIES = 100_000;

/** How long POST /process waits for `waitForPorts` when no timeout was given. */
export const DEFAULT_PORT_WAIT_SECONDS = 60;
/** The longest `timeout` a process may be given. */
export const MAX_PROCESS_TIMEOUT_SECONDS = 7 * 24 * 3600;

/** Multipart upload: the largest part (the reference SDK's part size), and part numbers 1 to this. */
export const MULTIPART_MAX_PART_BYTES = 5 * 1024 * 1024;
export const MULTIPART_MAX_PART_NUMBER = 10_000;
/** An upload that received nothing for this long is abandoned: its parts are deleted. */
export const MULTIPART_IDLE_SECONDS = 24 * 3600;
/** The timeout of a keepAlive process that was given none (the reference's 10 minutes). */
export const KEEP_ALIVE_DEFAULT_TIMEOUT_SECONDS = 600;
/** POST /process/{process}/stdin: the largest body (the reference's 8 MiB), written whole. */
export const STDIN_MAX_BODY_BYTES = 8 * 1024 * 1024;
