/** An outbox row as the flush sees it before reading its events. */
export interface OutboxRow {
  seq: string;
  account_id: string;
  event_count: number;
  /** Hour starts (epoch seconds) its events fall in. */
  hours: string[];
}

export interface OutboxHead extends OutboxRow {
  /** How long ago it was accepted. */
  waited_ms: number;
}

export interface FlushBatchRules {
  /** At most this many events per insert (a single larger row still goes alone). */
  maxEvents: number;
  /** At most this many outbox rows per insert; `heads` holds at most this many. */
  maxRows: number;
  /** A batch that fills less than an insert waits until its oldest row has waited this long. */
  gatherMs: number;
}

/**
 * The next flush batch from the oldest outbox rows (`heads`, in seq order): the longest prefix
 * within the limits (empty when the outbox is), and whether to flush it now rather than wait for
 * more: not while it fills less than an insert and its oldest row is younger than gatherMs.
 */
export function chooseFlushBatch(heads: OutboxHead[], rules: FlushBatchRules): { rows: OutboxRow[]; ready: boolean } {
  const chosen: OutboxRow[] = [];
  let events = 0;
  for (const head of heads) {
    if (chosen.length > 0 && events + head.event_count > rules.maxEvents) break;
    chosen.push(head);
    events += head.event_count;
  }
  const full = chosen.length < heads.length || chosen.length >= rules.maxRows || events >= rules.maxEvents;
  return { rows: chosen, ready: chosen.length === 0 || full || heads[0].waited_ms >= rules.gatherMs };
}
