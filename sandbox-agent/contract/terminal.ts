import { schemaOf } from './schema';

/**
 * The terminal (`GET /terminal/ws`, a WebSocket): one JSON text message each way per event, as
 * the reference frames them. In: `{"type":"input","data":"ls\r"}` (keys typed) and
 * `{"type":"resize","cols":120,"rows":40}`. Out: `{"type":"output","data":"..."}` (what the
 * terminal shows, its echo included) and `{"type":"error","data":"..."}` (a message that could not
 * be served, or a terminal that could not start). The socket closes (1000) when the shell exits,
 * its reason saying the exit status (`the shell exited with code 3`).
 */
export type TerminalMessageType = 'input' | 'resize' | 'output' | 'error';

export interface TerminalMessage {
  type: TerminalMessageType;
  data?: string;
  cols?: number;
  rows?: number;
}

/** Columns and rows a terminal may have (the kernel keeps them in 16 bits). */
export const MAX_TERMINAL_CELLS = 65_535;

/** What the client asked for, or why its message cannot be served (naming the field). */
export type TerminalRequest = { type: 'input'; data: string } | { type: 'resize'; cols: number; rows: number };

const isCells = (n: unknown): n is number => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= MAX_TERMINAL_CELLS;

export function parseTerminalMessage(text: string): TerminalRequest | { problem: string } {
  let message: Partial<TerminalMessage>;
  try {
    message = JSON.parse(text) as Partial<TerminalMessage>;
  } catch {
    return { problem: 'a message must be a JSON object such as {"type":"input","data":"ls\\r"}' };
  }
  if (typeof message !== 'object' || message === null) return { problem: 'a message must be a JSON object' };
  if (message.type === 'input') {
    return typeof message.data === 'string' ? { type: 'input', data: message.data } : { problem: "'data' of an input message must be a string" };
  }
  if (message.type === 'resize') {
    if (!isCells(message.cols)) return { problem: `'cols' of a resize message must be an integer from 1 to ${MAX_TERMINAL_CELLS}` };
    if (!isCells(message.rows)) return { problem: `'rows' of a resize message must be an integer from 1 to ${MAX_TERMINAL_CELLS}` };
    return { type: 'resize', cols: message.cols, rows: message.rows };
  }
  return { problem: "'type' must be 'input' or 'resize'" };
}

export const terminalMessageSchema = schemaOf<TerminalMessage>({
  type: 'object',
  description: 'One WebSocket message of the terminal, either way: input and resize in, output and error out.',
  properties: {
    type: { type: 'string', enum: ['input', 'resize', 'output', 'error'] },
    data: { type: 'string', optional: true, description: 'Keys typed (input), what the terminal shows (output), or why (error).' },
    cols: { type: 'integer', minimum: 1, maximum: MAX_TERMINAL_CELLS, optional: true, description: 'Columns (resize).' },
    rows: { type: 'integer', minimum: 1, maximum: MAX_TERMINAL_CELLS, optional: true, description: 'Rows (resize).' },
  },
});
