import { randomBytes } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import WebSocket from 'ws';
import { apiMessage, authHeaders, refusal, request, send } from './client';
import type { CommandContext } from './context';
import type { Credentials } from './credentials';
import { CommandError } from './errors';

/** The shell a piped session runs: the image's bash, else its sh (as the terminal picks). */
const SHELL = 'if [ -x /bin/bash ]; then exec /bin/bash; else exec /bin/sh; fi';

/** One line of POST /process streamed (contract/process.ts ExecutionEvent). */
type ExecutionEvent = { type: 'stdout' | 'stderr'; data: string } | { type: 'keepalive' } | { type: 'result'; data: string };

/** Local stdin to the process's stdin pipe, chunk by chunk and in order, then EOF; stops once the process ended. */
async function feedStdin(credentials: Credentials, url: string, input: NodeJS.ReadableStream, ended: () => boolean): Promise<void> {
  for await (const chunk of input as AsyncIterable<Buffer>) {
    if (ended()) return;
    const answer = await request(credentials, 'POST', `${url}/stdin`, { bytes: chunk, contentType: 'application/octet-stream' });
    // A process that exited meanwhile takes no more input: nothing is lost that it would have read.
    if (answer.status !== 200) return;
  }
  if (!ended()) await request(credentials, 'DELETE', `${url}/stdin`);
}

/** The NDJSON events of a streamed process, as they come. */
async function* executionEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ExecutionEvent> {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    pending += decoder.write(Buffer.from(chunk));
    let newline: number;
    while ((newline = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      if (line.trim()) yield JSON.parse(line) as ExecutionEvent;
    }
  }
}

/**
 * A shell without a terminal (stdin is a pipe or a file): a process of the sandbox API with its
 * stdin open, fed with ours, its output streamed back to our stdout and stderr, and our exit code
 * its. No terminal, so no echo and no prompt: `echo 'ls; exit 3' | hangar sandbox shell x`
 * prints what `ls` prints and exits 3.
 */
export async function pipedShell(ctx: CommandContext, credentials: Credentials, base: string, input: NodeJS.ReadableStream): Promise<number> {
  const name = `hangar-shell-${randomBytes(6).toString('hex')}`;
  const response = await send(credentials, 'POST', `${base}/process`, { name, command: SHELL, stdin: true }, { accept: 'application/x-ndjson' });
  if (!response.ok || !response.body) throw refusal('POST', `${base}/process`, { status: response.status, json: await response.json().catch(() => null) });
  let result: { exitCode: number | null; status?: string } | undefined;
  let interrupted = false;
  // Ctrl-C ends the shell in the sandbox too, rather than leaving it waiting for input.
  const interrupt = () => {
    interrupted = true;
    void request(credentials, 'POST', `${base}/process/${name}/kill`).catch(() => undefined);
  };
  process.once('SIGINT', interrupt);
  const feeding = feedStdin(credentials, `${base}/process/${name}`, input, () => result !== undefined);
  try {
    for await (const event of executionEvents(response.body)) {
      if (event.type === 'stdout') ctx.out(event.data);
      else if (event.type === 'stderr') ctx.err(event.data);
      else if (event.type === 'result') result = JSON.parse(event.data) as typeof result;
    }
  } finally {
    process.off('SIGINT', interrupt);
  }
  if (interrupted) return 130;
  // Our stdin may still be open (a terminal-less stdin nobody closes): it is not waited for.
  void feeding.catch(() => undefined);
  if (typeof result?.exitCode !== 'number') throw new CommandError(`the shell did not finish (status ${result?.status ?? 'unknown'}): its stream ended early`);
  return result.exitCode;
}

/** The exit code the terminal's closing says (`the shell exited with code 3`), 0 when it does not. */
export function exitCodeOf(reason: string): number {
  const match = /with code (\d+)/.exec(reason);
  return match ? Number(match[1]) : 0;
}

interface Tty {
  input: NodeJS.ReadStream;
  output: NodeJS.WriteStream;
}

/**
 * An interactive shell on a terminal of the sandbox (GET /terminal/ws): our terminal in raw mode,
 * every key sent as typed (Ctrl-C included, for the sandbox's shell to act on), the terminal's
 * output written as it comes, our window's size followed. Ends when the shell exits.
 */
export function terminalShell(credentials: Credentials, base: string, tty: Tty): Promise<number> {
  // A terminal that does not know its size (0 x 0) gets the usual 80 x 24.
  const size = () => ({ cols: tty.output.columns || 80, rows: tty.output.rows || 24 });
  const url = `${base.replace(/^http/, 'ws')}/terminal/ws?cols=${size().cols}&rows=${size().rows}`;
  const socket = new WebSocket(url, { headers: authHeaders(credentials) });
  const decoder = new StringDecoder('utf8');
  const onInput = (chunk: Buffer) => socket.send(JSON.stringify({ type: 'input', data: decoder.write(chunk) }));
  const onResize = () => socket.send(JSON.stringify({ type: 'resize', ...size() }));
  return new Promise((resolve, reject) => {
    let failure: string | undefined;
    socket.on('unexpected-response', (req, res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => {
        let json: unknown = text;
        try {
          json = JSON.parse(text);
        } catch {
          // Not JSON: the text is the message.
        }
        reject(new CommandError(`the terminal was refused: ${res.statusCode} ${apiMessage({ status: res.statusCode ?? 0, json })}`));
        req.destroy();
      });
    });
    socket.on('open', () => {
      tty.input.setRawMode(true);
      tty.input.on('data', onInput);
      tty.input.resume();
      tty.output.on('resize', onResize);
    });
    socket.on('message', (raw) => {
      const message = JSON.parse(raw.toString()) as { type: string; data?: string };
      if (message.type === 'output') tty.output.write(message.data ?? '');
      else if (message.type === 'error') process.stderr.write(`hangar: ${message.data ?? ''}\r\n`);
    });
    socket.on('error', (err) => (failure ??= `the terminal connection failed: ${err.message}`));
    socket.on('close', (code, reason) => {
      tty.input.off('data', onInput);
      tty.output.off('resize', onResize);
      if (tty.input.isRaw) tty.input.setRawMode(false);
      tty.input.pause();
      if (failure) reject(new CommandError(failure));
      // 1000: the shell exited; anything else (1011: no terminal could start) is a failure.
      else if (code !== 1000) reject(new CommandError(`the terminal closed (${code} ${reason.toString() || 'no reason'}): hangar sandbox exec still runs commands`));
      else resolve(exitCodeOf(reason.toString()));
    });
  });
}
