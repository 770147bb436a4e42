import { chooseFlushBatch, type OutboxHead } from '../../../../domain/billing/flush-batch';

const rules = { maxEvents: 1_000, maxRows: 4, gatherMs: 2_000 };
const head = (seq: number, events: number, waitedMs: number): OutboxHead => ({
  seq: String(seq),
  account_id: 'acc-1',
  event_count: events,
  hours: ['0'],
  waited_ms: waitedMs,
});
const seqs = (batch: ReturnType<typeof chooseFlushBatch>) => batch.rows.map((row) => row.seq);

describe('chooseFlushBatch', () => {
  it('has nothing to do on an empty outbox', () => {
    expect(chooseFlushBatch([], rules)).toEqual({ rows: [], ready: true });
  });

  it('waits for more while the batch is small and its oldest row young', () => {
    const batch = chooseFlushBatch([head(1, 10, 1_999), head(2, 10, 500)], rules);
    expect(batch.ready).toBe(false);
    expect(seqs(batch)).toEqual(['1', '2']);
  });

  it('flushes a small batch once its oldest row has waited gatherMs', () => {
    expect(chooseFlushBatch([head(1, 10, 2_000), head(2, 10, 0)], rules)).toMatchObject({ ready: true });
    expect(chooseFlushBatch([head(1, 10, 5_000)], { ...rules, gatherMs: 0 })).toMatchObject({ ready: true });
  });

  it('flushes at once what fills an insert, by events or by rows, and leaves the rest', () => {
    const byEvents = chooseFlushBatch([head(1, 600, 0), head(2, 400, 0), head(3, 1, 0)], rules);
    expect(byEvents.ready).toBe(true);
    expect(seqs(byEvents)).toEqual(['1', '2']);
    const overflow = chooseFlushBatch([head(1, 600, 0), head(2, 600, 0)], rules);
    expect(seqs(overflow)).toEqual(['1']);
    expect(overflow.ready).toBe(true);
    expect(chooseFlushBatch([1, 2, 3, 4].map((seq) => head(seq, 1, 0)), rules)).toMatchObject({ ready: true });
  });

  it('sends a single row larger than an insert alone', () => {
    const batch = chooseFlushBatch([head(1, 5_000, 0), head(2, 1, 0)], rules);
    expect(seqs(batch)).toEqual(['1']);
    expect(batch.ready).toBe(true);
  });
});
