/** A stage of a long command, as its progress is shown. */
export type Stage = 'upload' | 'build' | 'deploy';

/** Where a stage stands: a fraction when it is known (bytes sent, build steps), and what happens now. */
export interface ProgressEvent {
  stage: Stage;
  fraction?: number;
  message: string;
  /** A step of a bar (bytes sent so far): drawn on a terminal, not written as a line elsewhere. */
  transient?: boolean;
}

export type ProgressListener = (event: ProgressEvent) => void;

const BAR_CELLS = 24;

function bar(fraction: number | undefined): string {
  if (fraction === undefined) return ''.padEnd(BAR_CELLS + 7);
  const clamped = Math.min(1, Math.max(0, fraction));
  const filled = Math.round(clamped * BAR_CELLS);
  return `[${'#'.repeat(filled)}${'-'.repeat(BAR_CELLS - filled)}] ${String(Math.round(clamped * 100)).padStart(3)}%`;
}

/**
 * Progress written to stderr (stdout stays for the result, so `--output json` can be piped). On a
 * terminal, one line per stage redrawn in place with a bar; elsewhere (a pipe, a CI log) plain
 * lines, one per change of message, without the transient byte-by-byte updates a bar redraws for.
 */
export function progressPrinter(write: (text: string) => void, tty: boolean, columns?: number): ProgressListener & { done(): void } {
  // A terminal that does not know its width says 0.
  const width = columns && columns > 0 ? columns : 100;
  let stage: Stage | undefined;
  let lastMessage = '';
  const finishLine = () => {
    if (tty && stage) write('\n');
  };
  const listener = (event: ProgressEvent) => {
    if (!tty) {
      if (event.transient || (event.stage === stage && event.message === lastMessage)) return;
      stage = event.stage;
      lastMessage = event.message;
      write(`${event.stage}: ${event.message}\n`);
      return;
    }
    if (event.stage !== stage) finishLine();
    stage = event.stage;
    const line = `${event.stage.padEnd(6)} ${bar(event.fraction)} ${event.message}`;
    // \r and erase-line: the line is redrawn, cut to the terminal's width so it never wraps.
    write(`\r\x1b[2K${line.slice(0, Math.max(20, width - 1))}`);
  };
  return Object.assign(listener, {
    done: () => {
      finishLine();
      stage = undefined;
    },
  });
}
