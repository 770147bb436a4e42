import { DEFAULT_PORT_WAIT_SECONDS, KEEP_ALIVE_DEFAULT_TIMEOUT_SECONDS, MAX_PROCESS_TIMEOUT_SECONDS } from './limits';
import { schemaOf } from './schema';

/** The processes API (`/process...`): what a caller sends and what the agent answers. */

export type ProcessStatus = 'running' | 'completed' | 'failed' | 'killed' | 'stopped';

export const PROCESS_STATUSES: readonly ProcessStatus[] = ['running', 'completed', 'failed', 'killed', 'stopped'];


/** The body of POST /process. */
export interface ProcessRequest {
  command: string;
  name?: string;
  workingDir?: string;
  env?: Record<string, string>;
  waitForCompletion?: boolean;
  /** Seconds the process may run before it is killed; 0: no limit. */
  timeout?: number;
  /** Keep the sandbox out of standby while it runs; its timeout is then 600 s unless given. */
  keepAlive?: boolean;
  waitForPorts?: number[];
  restartOnFailure?: boolean;
  maxRestarts?: number;
  /** Open a pipe to its stdin, fed by POST and closed by DELETE /process/{process}/stdin; otherwise stdin is /dev/null. */
  stdin?: boolean;
}

/** One process as the agent reports it: every /process route answers this (or a list of it). */
export interface ProcessRecord {
  pid: number;
  name: string;
  command: string;
  status: ProcessStatus;
  startedAt: string;
  completedAt: string | null;
  exitCode: number | null;
  workingDir: string;
  logs: string;
  stdout: string;
  stderr: string;
  restartOnFailure: boolean;
  maxRestarts: number;
  restartCount: number;
  /** Whether it keeps the sandbox out of standby while it runs. */
  keepAlive: boolean;
  /** Whether it was started with a writable stdin pipe. */
  stdin: boolean;
}

/** What POST and DELETE /process/{process}/stdin answer. */
export interface StdinMessage {
  message: string;
}

/**
 * One line of POST /process streamed (NDJSON): a line of output with its newline, a keepalive
 * when nothing else was said for a while, and last the final record, as a JSON string (as the
 * reference sends it).
 */
export type ExecutionEvent = { type: 'stdout' | 'stderr'; data: string } | { type: 'keepalive' } | { type: 'result'; data: string };

/** GET /process/{process}/logs. */
export interface ProcessLogs {
  stdout: string;
  stderr: string;
  /** Both streams interleaved as they were written. */
  logs: string;
}

const text = (description?: string) => ({ type: 'string' as const, description });
const moment = (description: string) => ({ type: 'string' as const, format: 'date-time', description });

export const processRequestSchema = schemaOf<ProcessRequest>({
  type: 'object',
  description: 'A command to run in the sandbox (by /bin/sh).',
  properties: {
    command: text('The shell command line.'),
    name: { type: 'string', optional: true, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$', description: 'A name to find it by (not only digits); unique among running processes.' },
    workingDir: { ...text('Folder it starts in; the sandbox\'s default folder when absent.'), optional: true },
    env: { type: 'object', additionalProperties: { type: 'string' }, optional: true, description: 'Environment variables added to the sandbox\'s own.' },
    waitForCompletion: { type: 'boolean', optional: true, description: 'Answer once it ended.' },
    timeout: { type: 'number', minimum: 0, maximum: MAX_PROCESS_TIMEOUT_SECONDS, optional: true, description: `Seconds it may run before it is killed; 0: no limit (the default, but ${KEEP_ALIVE_DEFAULT_TIMEOUT_SECONDS} with keepAlive).` },
    keepAlive: { type: 'boolean', optional: true, description: 'Keep the sandbox out of standby while it runs.' },
    waitForPorts: { type: 'array', items: { type: 'integer', minimum: 1, maximum: 65535 }, optional: true, description: `Answer once it listens on these ports (at most ${DEFAULT_PORT_WAIT_SECONDS} s unless timeout says otherwise).` },
    restartOnFailure: { type: 'boolean', optional: true, description: 'Start it again when it exits with a code other than 0.' },
    maxRestarts: { type: 'integer', minimum: 0, maximum: 1000, optional: true, description: 'Restarts allowed (3 by default with restartOnFailure).' },
    stdin: { type: 'boolean', optional: true, description: 'Open a writable stdin pipe (POST /process/{process}/stdin writes, DELETE closes); default false: stdin is /dev/null.' },
  },
});

export const processRecordSchema = schemaOf<ProcessRecord>({
  type: 'object',
  description: 'One process started through the API, across its restarts.',
  properties: {
    pid: { type: 'integer', description: 'Its current pid (a restart gets a new one).' },
    name: text(),
    command: text(),
    status: { type: 'string', enum: PROCESS_STATUSES },
    startedAt: moment('When it was started.'),
    completedAt: { ...moment('When it ended.'), nullable: true },
    exitCode: { type: 'integer', nullable: true },
    workingDir: text(),
    logs: text('Its output, both streams as written.'),
    stdout: text(),
    stderr: text(),
    restartOnFailure: { type: 'boolean' },
    maxRestarts: { type: 'integer' },
    restartCount: { type: 'integer' },
    keepAlive: { type: 'boolean', description: 'Whether it keeps the sandbox out of standby while it runs.' },
    stdin: { type: 'boolean', description: 'Whether it was started with a writable stdin pipe.' },
  },
});

export const processLogsSchema = schemaOf<ProcessLogs>({
  type: 'object',
  properties: { stdout: text(), stderr: text(), logs: text('Both streams as written.') },
});

export const stdinMessageSchema = schemaOf<StdinMessage>({ type: 'object', properties: { message: text() } });
