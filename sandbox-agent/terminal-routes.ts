import fs from 'node:fs';
import path from 'node:path';
import type { WebSocket, WebSocketServer } from 'ws';
import { MAX_TERMINAL_CELLS, parseTerminalMessage, type TerminalMessage } from './contract/terminal';
import { HttpError, badRequest } from './http';
import type { RouteHandlers, UpgradeHandler } from './route-handler';
import { isExecutable } from './executables';
import { TerminalSession, defaultShell, type TerminalOptions } from './terminal';

/** What the terminal's shells start with: the sandbox's process environment (as it is now) and default folder. */
export interface TerminalDefaults {
  env: () => Record<string, string>;
  defaultWorkingDir: string;
}

/** Keys typed arrive in small messages; a paste may be larger, never this large. */
const MAX_MESSAGE_BYTES = 1024 * 1024;

function cells(query: URLSearchParams, name: 'cols' | 'rows', fallback: number): number {
  const text = query.get(name);
  if (text === null) return fallback;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < 1 || value > MAX_TERMINAL_CELLS) throw badRequest(`'${name}' must be an integer from 1 to ${MAX_TERMINAL_CELLS}`);
  return value;
}

/** The terminal a request asks for (`cols`, `rows`, `shell`, `workingDir`), checked before the upgrade. */
function terminalOptions(query: URLSearchParams, defaults: TerminalDefaults): TerminalOptions {
  const shell = query.get('shell') || defaultShell();
  if (!path.isAbsolute(shell) || !isExecutable(shell)) throw badRequest(`'shell' ${shell} is not an executable file of the sandbox (an absolute path)`);
  const workingDir = query.get('workingDir') || defaults.defaultWorkingDir;
  if (!fs.statSync(workingDir, { throwIfNoEntry: false })?.isDirectory()) throw badRequest(`'workingDir' ${workingDir} is not an existing directory`);
  return { shell, workingDir, env: defaults.env(), size: { cols: cells(query, 'cols', 80), rows: cells(query, 'rows', 24) } };
}

/** Output waiting to go to a client at most; past it, the terminal is not read until it went. */
const MAX_PENDING_OUTPUT_BYTES = 1024 * 1024;

/** One WebSocket client's terminal: its messages in, the terminal's output out, both ended together. */
function serveTerminal(socket: WebSocket, options: TerminalOptions): void {
  let session: TerminalSession | undefined;
  let paused = false;
  const sent = () => {
    if (paused && socket.bufferedAmount < MAX_PENDING_OUTPUT_BYTES / 2) {
      paused = false;
      session?.resume();
    }
  };
  const send = (message: TerminalMessage) => {
    if (socket.readyState !== socket.OPEN) return;
    socket.send(JSON.stringify(message), sent);
    if (!paused && socket.bufferedAmount > MAX_PENDING_OUTPUT_BYTES) {
      paused = true;
      session?.pause();
    }
  };
  try {
    session = new TerminalSession(options, (data) => send({ type: 'output', data }), (code) => socket.close(1000, code === null ? 'the shell exited' : `the shell exited with code ${code}`));
  } catch (err) {
    send({ type: 'error', data: (err as Error).message });
    socket.close(1011, 'no terminal');
    return;
  }
  const terminal = session;
  socket.on('message', (raw, isBinary) => {
    // Binary frames carry keys typed as they are, as some terminal clients send them.
    const request = isBinary ? { type: 'input' as const, data: raw.toString() } : parseTerminalMessage(raw.toString());
    if ('problem' in request) send({ type: 'error', data: request.problem });
    else (request.type === 'input' ? terminal.write(request.data) : terminal.resize(request)).catch((err: Error) => send({ type: 'error', data: `${request.type} failed: ${err.message}` }));
  });
  socket.on('close', () => void terminal.close());
}

/**
 * GET /terminal/ws: an interactive shell on a pseudo-terminal over WebSocket (terminal.ts says how
 * the PTY is had). Each connection gets a shell of its own, ended with everything started from it
 * when the connection closes. A request without the upgrade is answered 426.
 */
export function terminalRoutes(defaults: TerminalDefaults) {
  let server: WebSocketServer | undefined;
  // The WebSocket library loads on the first terminal, as the MCP SDK on the first /mcp request:
  // an idle sandbox's memory is the agent's at start, and most sandboxes never open a terminal.
  // The class is taken out first: `new (require('ws') as ...).WebSocketServer(...)` is emitted by
  // the TypeScript 7 compiler without its parentheses, which calls the class without `new`.
  const loadServer = () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { WebSocketServer: Server } = require('ws') as typeof import('ws');
    return new Server({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  };
  const upgrade: UpgradeHandler = (req, socket, head, { query }) => {
    const options = terminalOptions(query, defaults);
    (server ??= loadServer()).handleUpgrade(req, socket, head, (client) => serveTerminal(client, options));
  };
  return {
    handlers: {
      terminal: async () => {
        throw new HttpError(426, 'GET /terminal/ws opens a WebSocket: send Connection: Upgrade and Upgrade: websocket');
      },
    } satisfies RouteHandlers<'terminal'>,
    upgrades: { terminal: upgrade },
  };
}
