export type OutputStream = 'stdout' | 'stderr';

export interface OutputChunk {
  stream: OutputStream;
  text: string;
}

export interface OutputFollower {
  chunk(chunk: OutputChunk): void;
  end(): void;
}

/**
 * A process's output in arrival order, kept so that a reader arriving late sees it all. A
 * follower is given everything stored so far and then each new chunk, in one synchronous step,
 * so nothing is lost or seen twice between the replay and the live part.
 */
export class OutputLog {
  private readonly chunks: OutputChunk[] = [];
  private readonly followers = new Set<OutputFollower>();
  private storedBytes = 0;
  private ended = false;
  /** Bytes dropped from the front once the log outgrew its cap (followers got them live). */
  droppedBytes = 0;

  constructor(private readonly maxBytes: number) {}

  append(stream: OutputStream, text: string): void {
    if (!text) return;
    const chunk = { stream, text };
    this.chunks.push(chunk);
    this.storedBytes += text.length;
    while (this.storedBytes > this.maxBytes && this.chunks.length > 1) {
      const dropped = this.chunks.shift()!;
      this.storedBytes -= dropped.text.length;
      this.droppedBytes += dropped.text.length;
    }
    for (const follower of this.followers) follower.chunk(chunk);
  }

  /** No more output will come: followers are told and released. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    for (const follower of this.followers) follower.end();
    this.followers.clear();
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /** Characters held for late readers. */
  get size(): number {
    return this.storedBytes;
  }

  text(stream?: OutputStream): string {
    return this.chunks
      .filter((chunk) => !stream || chunk.stream === stream)
      .map((chunk) => chunk.text)
      .join('');
  }

  /** Replays, then follows until end(); returns the unsubscribe function. */
  follow(follower: OutputFollower): () => void {
    for (const chunk of this.chunks) follower.chunk(chunk);
    if (this.ended) {
      follower.end();
      return () => undefined;
    }
    this.followers.add(follower);
    return () => this.followers.delete(follower);
  }
}

/**
 * Cuts each stream's chunks into whole lines, each given with its newline; a line split across
 * chunks is held until its end arrives. The log stream endpoint and the streamed execution frame
 * what it gives them each in their own format.
 */
export class LineFramer {
  private readonly partial: Record<OutputStream, string> = { stdout: '', stderr: '' };

  constructor(private readonly line: (stream: OutputStream, text: string) => void) {}

  chunk({ stream, text }: OutputChunk): void {
    const pieces = (this.partial[stream] + text).split('\n');
    this.partial[stream] = pieces.pop()!;
    for (const piece of pieces) this.line(stream, `${piece}\n`);
  }

  /** The last line of each stream, without a newline if it had none. */
  flush(): void {
    for (const stream of ['stdout', 'stderr'] as const) {
      if (this.partial[stream]) this.line(stream, this.partial[stream]);
      this.partial[stream] = '';
    }
  }
}

/** A line as the log stream endpoint sends it: its stream first ("stdout:..."), always ended by a newline. */
export function prefixedLine(stream: OutputStream, text: string): string {
  return `${stream}:${text.endsWith('\n') ? text : `${text}\n`}`;
}
