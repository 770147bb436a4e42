import { costNano, formatScaled, parseScaled, quantityToNano, scaledToNumber } from '../../../../domain/billing/decimal';
import { InvalidInput } from '../../../../domain/billing/errors';
import { meterEventId, tickEvent } from '../../../../domain/billing/metering';
import { createHash } from 'node:crypto';
import {
  batchHours,
  encodeUsageBatch,
  eventKeyPrefix,
  eventKeyText,
  ledgerCopyData,
  outboxCopyData,
  RAW_COLUMNS,
  selectRows,
  tsvField,
  writeEventKey,
} from '../../../../domain/billing/usage-batch';
import { parseEvent, parseUsageEvents } from '../../../../domain/billing/usage-events';
import { DIGEST_MARK, legacyPayloadDigest, payloadDigest, sameDigest } from '../../../../domain/billing/payload-digest';

const NOW = Date.parse('2026-04-16T12:00:00Z');
const good = {
  id: 'evt-1',
  timestamp: '2026-04-16T11:00:00Z',
  workspace: 'prod',
  resourceType: 'sandbox',
  resourceName: 'web',
  resourceUuid: '4f7c',
  billingDimension: 'sandbox_compute_runtime_gbs',
  quantity: 1.5,
};

function failure(body: unknown): InvalidInput {
  try {
    parseUsageEvents(body, NOW);
  } catch (err) {
    if (err instanceof InvalidInput) return err;
    throw err;
  }
  throw new Error('accepted');
}

describe('parseUsageEvents', () => {
  it('normalises a valid event', () => {
    const [event] = parseUsageEvents({ events: [good] }, NOW);
    expect(event).toEqual({
      id: 'evt-1',
      timeMs: Date.parse('2026-04-16T11:00:00Z'),
      workspace: 'prod',
      resourceType: 'sandbox',
      resourceName: 'web',
      resourceUuid: '4f7c',
      billingDimension: 'sandbox_compute_runtime_gbs',
      quantityNano: 1_500_000_000n,
    });
  });

  it('accepts backfill, offsets, a missing resourceUuid and up to 5 minutes of clock skew', () => {
    const { resourceUuid: _omitted, ...noUuid } = good;
    const events = parseUsageEvents(
      {
        events: [
          { ...good, timestamp: '2020-01-01T00:00:00Z' },
          { ...good, timestamp: '2026-04-16T14:00:00+02:00' },
          noUuid,
          { ...good, timestamp: '2026-04-16T12:05:00Z' },
        ],
      },
      NOW,
    );
    expect(events[1].timeMs).toBe(Date.parse('2026-04-16T12:00:00Z'));
    expect(events[2].resourceUuid).toBe('');
  });

  it.each([
    [{ ...good, quantity: -1 }, 'quantity'],
    [{ ...good, quantity: '5' }, 'quantity'],
    [{ ...good, quantity: null }, 'quantity'],
    [{ ...good, quantity: 1e16 }, 'quantity'],
    [{ ...good, timestamp: '2026-04-16T12:05:01Z' }, 'timestamp'],
    [{ ...good, timestamp: '16/04/2026' }, 'timestamp'],
    [{ ...good, timestamp: 1776340800 }, 'timestamp'],
    [{ ...good, billingDimension: 'gpu_gbs' }, 'billingDimension'],
    [{ ...good, resourceType: 'vm' }, 'resourceType'],
    [{ ...good, resourceType: 'agent' }, 'resourceType'],
    [{ ...good, id: '' }, 'id'],
    [{ ...good, id: 'x'.repeat(129) }, 'id'],
    [{ ...good, id: 'a\nb' }, 'id'],
    [{ ...good, workspace: 7 }, 'workspace'],
    [{ ...good, resourceName: '' }, 'resourceName'],
    [{ ...good, unit: 'gbs' }, 'unit'],
    [{ ...good, cost: 0 }, 'cost'],
    [{ ...good, accountId: 'acc' }, 'accountId'],
  ])('refuses %j naming the index and field %s', (bad, field) => {
    const err = failure({ events: [good, good, bad] });
    expect(err.index).toBe(2);
    expect(err.parameter).toBe(field);
    expect(err.message).toContain(`events[2].${field}`);
  });

  it('refuses bodies of the wrong shape or size', () => {
    expect(failure([good]).parameter).toBe('events');
    expect(failure({}).parameter).toBe('events');
    expect(failure({ events: 'x' }).parameter).toBe('events');
    expect(failure({ events: [good], extra: 1 }).parameter).toBe('extra');
    expect(failure({ events: [good, 'x'] }).index).toBe(1);
    const big = failure({ events: new Array(10_001).fill(good) });
    expect([big.parameter, big.message]).toEqual(['events', expect.stringContaining('10000')]);
    expect(parseUsageEvents({ events: new Array(10_000).fill(good) }, NOW)).toHaveLength(10_000);
  });
});

describe('usage batch', () => {
  const [event] = parseUsageEvents({ events: [good] }, NOW);
  const prices = new Map([['sandbox_compute_runtime_gbs', 8_300_000n]]);
  const encode = (...events: Record<string, unknown>[]) => encodeUsageBatch('acc-1', parseUsageEvents({ events }, NOW), prices);
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

  it('keys an id per account with the digest earlier ledgers hold', () => {
    const key = (accountId: string, id: string) => {
      const keys = Buffer.alloc(16);
      writeEventKey(keys, 0, eventKeyPrefix(accountId), id);
      return eventKeyText(keys, 0);
    };
    // Written by earlier versions as the uuid of SHA-256 over `length:account` and id.
    const hex = sha256('5:acc-1evt-1');
    expect(key('acc-1', 'evt-1')).toBe(`${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`);
    expect(key('acc-1', 'evt-1')).not.toBe(key('acc-2', 'evt-1'));
    // The length prefix keeps account/id boundaries apart.
    expect(key('acc-1', '1evt')).not.toBe(key('acc-11', 'evt'));
  });

  it('digests what the event says, not how it was written', () => {
    const [same] = parseUsageEvents({ events: [{ ...good, timestamp: '2026-04-16T13:00:00+02:00', id: 'other', quantity: 1.5000000001 }] }, NOW);
    expect(payloadDigest(same)).toBe(payloadDigest(event));
    expect(payloadDigest(event)).toBeGreaterThanOrEqual(DIGEST_MARK);
    expect(payloadDigest(event)).toBeLessThan(2 * DIGEST_MARK);
    const changes = [{ quantity: 1.6 }, { resourceName: 'api' }, { timestamp: '2026-04-16T11:00:00.001Z' }, { resourceUuid: '' }, { workspace: 'prod2' }];
    // Text moved from one field to the next is a change too.
    changes.push({ resourceName: 'web4', resourceUuid: 'f7c' } as never);
    const digests = changes.map((change) => payloadDigest(parseUsageEvents({ events: [{ ...good, ...change }] }, NOW)[0]));
    expect(new Set([...digests, payloadDigest(event)]).size).toBe(changes.length + 1);
  });

  it('spreads digests over their 52 bits', () => {
    // Events differing in one character of one field: no two alike, and every bit of the
    // digest set about half the time.
    const digests = Array.from({ length: 4_000 }, (_, i) => payloadDigest(parseUsageEvents({ events: [{ ...good, resourceName: `web-${i}` }] }, NOW)[0]));
    expect(new Set(digests).size).toBe(digests.length);
    for (let bit = 0; bit < 52; bit++) {
      const set = digests.filter((digest) => Math.floor((digest - DIGEST_MARK) / 2 ** bit) % 2 === 1).length;
      expect(Math.abs(set / digests.length - 0.5)).toBeLessThan(0.05);
    }
  });

  it('compares a stored digest with the function that made it', () => {
    // Earlier ledgers hold the first 52 bits of SHA-256 over the event's text, below DIGEST_MARK.
    const text = `${Date.parse('2026-04-16T11:00:00Z')}\nprod\nsandbox\nweb\n4f7c\nsandbox_compute_runtime_gbs\n1500000000`;
    const legacy = parseInt(sha256(text).slice(0, 13), 16);
    expect(legacyPayloadDigest(event)).toBe(legacy);
    const current = payloadDigest(event);
    const [changed] = parseUsageEvents({ events: [{ ...good, quantity: 2 }] }, NOW);
    expect(sameDigest(current, current, () => legacy)).toBe(true);
    expect(sameDigest(legacy, current, () => legacy)).toBe(true);
    expect(sameDigest(legacy, payloadDigest(changed), () => legacyPayloadDigest(changed))).toBe(false);
    expect(sameDigest(current, payloadDigest(changed), () => legacy)).toBe(false);
    // A current digest is never compared with a legacy one, even when the legacy one would match.
    expect(sameDigest(current, payloadDigest(changed), () => current)).toBe(false);
    const batch = encode(good);
    expect(batch.hashes[0]).toBe(current);
    expect(batch.legacyDigest(0)).toBe(legacy);
  });

  it('renders TabSeparated rows with exact decimals, the second of the event and escaped backslashes', () => {
    const batch = encode({ ...good, timestamp: '2026-04-16T11:00:00.900Z', resourceName: 'we"b\\x' }, { ...good, id: 'evt-2', timestamp: '2026-04-16T09:59:59Z' });
    const second = Date.parse('2026-04-16T11:00:00Z') / 1000;
    expect(batch.rows.toString()).toBe(
      `acc-1\tevt-1\t${second}\tprod\tsandbox\twe"b\\\\x\t4f7c\tsandbox_compute_runtime_gbs\t1.500000000\t0.000012450\n` +
        `acc-1\tevt-2\t${second - 3601}\tprod\tsandbox\tweb\t4f7c\tsandbox_compute_runtime_gbs\t1.500000000\t0.000012450\n`,
    );
    expect(RAW_COLUMNS.split(', ')).toHaveLength(10);
    expect(batchHours(batch).sort()).toEqual([second - 7200, second]);
    expect(batchHours(batch, [1])).toEqual([second - 7200]);
    expect([...batch.workspaces]).toEqual([['prod', 0]]);
    expect(selectRows(batch, [1]).toString()).toBe(batch.rows.toString().split('\n')[1] + '\n');
  });

  it('prices every event at the price it was given, rounded half up to the nano-dollar', () => {
    const batch = encode({ ...good, quantity: 0.0000005 }, { ...good, id: 'evt-2', quantity: 3 });
    // 0.0000005 x 0.0000083 USD = 4.15e-12 USD: below half a nano-dollar, so 0.
    expect(batch.rows.toString().split('\n').map((row) => row.split('\t').slice(8).join(' '))).toEqual([
      '0.000000500 0.000000000',
      '3.000000000 0.000024900',
      '',
    ]);
    expect(() => encodeUsageBatch('acc-1', [event], new Map())).toThrow(/no price/);
  });

  it('writes the ledger rows as PostgreSQL binary COPY data', () => {
    const batch = encode({ ...good, id: 'evt-2', quantity: 2 });
    const data = ledgerCopyData(batch);
    expect(data.subarray(0, 11).toString('latin1')).toBe('PGCOPY\n\xff\r\n\0');
    expect(data.length).toBe(19 + 34 + 2);
    expect(data.readInt16BE(19)).toBe(2);
    expect(data.readInt32BE(21)).toBe(16);
    expect(data.subarray(25, 41)).toEqual(batch.keys.subarray(0, 16));
    expect(data.readInt32BE(41)).toBe(8);
    expect(Number(data.readBigInt64BE(45))).toBe(batch.hashes[0]);
    expect(data.readInt16BE(53)).toBe(-1);
    expect(ledgerCopyData(encode(good, { ...good, id: 'evt-2', quantity: 2 })).length).toBe(19 + 2 * 34 + 2);
  });

  it('writes the outbox row as PostgreSQL binary COPY data, its rows sent as they are', () => {
    const batch = encode(good, { ...good, id: 'evt-2', timestamp: '2026-04-16T09:30:00Z' }, { ...good, id: 'evt-3' });
    const read = (pieces: Buffer[]) => {
      const data = Buffer.concat(pieces);
      let at = 19;
      const int32 = () => ((at += 4), data.readInt32BE(at - 4));
      expect(data.readInt16BE(at)).toBe(4);
      at += 2;
      const account = data.toString('utf8', at + 4, (at += 4 + data.readInt32BE(at)));
      expect(int32()).toBe(4);
      const count = int32();
      const arrayBytes = int32();
      const [dimensions, nulls, elementType, length, lowerBound] = [int32(), int32(), int32(), int32(), int32()];
      expect([dimensions, nulls, elementType, lowerBound, arrayBytes]).toEqual([1, 0, 20, 1, 20 + 12 * length]);
      const hours = Array.from({ length }, () => (int32(), Number(((at += 8), data.readBigInt64BE(at - 8)))));
      const tsv = data.toString('utf8', at + 4, (at += 4 + data.readInt32BE(at)));
      expect(data.readInt16BE(at)).toBe(-1);
      expect(data.length).toBe(at + 2);
      return { account, count, hours: hours.sort(), tsv };
    };
    const eleven = Date.parse('2026-04-16T11:00:00Z') / 1000;
    const all = outboxCopyData(batch);
    expect(all[1]).toBe(batch.rows);
    expect(read(all)).toEqual({ account: 'acc-1', count: 3, hours: [eleven - 7200, eleven], tsv: batch.rows.toString() });
    expect(read(outboxCopyData(batch, [0, 2]))).toEqual({ account: 'acc-1', count: 2, hours: [eleven], tsv: selectRows(batch, [0, 2]).toString() });
  });

  it('writes the ledger rows in key order, each key with its own digest', () => {
    const batch = encode(...Array.from({ length: 300 }, (_, i) => ({ ...good, id: `k-${i}`, quantity: i })));
    const data = ledgerCopyData(batch);
    const rows = Array.from({ length: 300 }, (_, n) => data.subarray(19 + 34 * n, 19 + 34 * (n + 1)));
    const keys = rows.map((row) => row.subarray(6, 22).toString('hex'));
    expect([...keys].sort()).toEqual(keys);
    const digestOf = new Map(Array.from({ length: 300 }, (_, i) => [batch.keys.toString('hex', 16 * i, 16 * i + 16), batch.hashes[i]]));
    expect(digestOf.size).toBe(300);
    rows.forEach((row, n) => expect(Number(row.readBigInt64BE(26))).toBe(digestOf.get(keys[n])));
  });

  it('orders keys that share their leading bytes by the rest', () => {
    const keys = Buffer.alloc(16 * 3, 0xab);
    [0xff, 0x01, 0x80].forEach((last, i) => keys.writeUInt8(last, 16 * i + 15));
    const batch = { ...encode(good, good, good), keys, hashes: new Float64Array([1, 2, 3]) };
    const data = ledgerCopyData(batch);
    expect([0, 1, 2].map((n) => data.readUInt8(19 + 34 * n + 6 + 15))).toEqual([0x01, 0x80, 0xff]);
    expect([0, 1, 2].map((n) => Number(data.readBigInt64BE(19 + 34 * n + 26)))).toEqual([2, 3, 1]);
  });

  it('escapes backslashes in TabSeparated fields and leaves the rest as it is', () => {
    expect(tsvField('plain')).toBe('plain');
    expect(tsvField('a\\N')).toBe('a\\\\N');
    expect(tsvField('é ü "q"')).toBe('é ü "q"');
  });
});

describe('fixed-point money', () => {
  it('parses and formats scaled decimals exactly', () => {
    expect(parseScaled('0.000008300000', 12)).toBe(8_300_000n);
    expect(parseScaled('12', 9)).toBe(12_000_000_000n);
    expect(parseScaled('-1.5', 9)).toBe(-1_500_000_000n);
    expect(parseScaled('1.5000000000000', 9)).toBe(1_500_000_000n);
    expect(() => parseScaled('1.0000000001', 9)).toThrow(RangeError);
    expect(() => parseScaled('1e5', 9)).toThrow(TypeError);
    expect(formatScaled(1_500_000_000n, 9)).toBe('1.500000000');
    expect(formatScaled(5n, 9)).toBe('0.000000005');
    expect(formatScaled(-5n, 9)).toBe('-0.000000005');
  });

  it('rounds quantities to the nano-unit and costs half up to the nano-dollar', () => {
    expect(quantityToNano(0.1)).toBe(100_000_000n);
    expect(quantityToNano(1e-10)).toBe(0n);
    expect(quantityToNano(123456.123456789)).toBe(123_456_123_456_789n);
    // 1 GB-s at 0.0000083 USD
    expect(costNano(1_000_000_000n, 8_300_000n)).toBe(8_300n);
    // 1 GB-s at 0.0000000386 USD = 38.6 nano-USD -> 39
    expect(costNano(1_000_000_000n, 38_600n)).toBe(39n);
    expect(costNano(1_000_000_000n, 38_400n)).toBe(38n);
    expect(costNano(0n, 38_400n)).toBe(0n);
  });

  it('turns nano-units into the nearest JSON number', () => {
    expect(scaledToNumber(123_456_789n, 9)).toBe(0.123456789);
    expect(String(scaledToNumber(1_234_567_890_123n, 9))).toBe('1234.567890123');
  });
});

describe('metering ids', () => {
  const tick = {
    accountId: 'acc-1',
    workspace: 'prod',
    resourceType: 'sandbox' as const,
    resourceName: 'web',
    resourceUuid: 'u-1',
    billingDimension: 'sandbox_compute_runtime_gbs' as const,
    quantity: 30,
    periodStart: new Date('2026-04-16T11:00:00Z'),
  };

  it('gives a retried tick the same id, and another period or dimension a new one', () => {
    expect(meterEventId(tick)).toBe(meterEventId({ ...tick }));
    expect(meterEventId({ ...tick, periodStart: new Date('2026-04-16T11:01:00Z') })).not.toBe(meterEventId(tick));
    expect(meterEventId({ ...tick, billingDimension: 'sandbox_snapshot_storage_gbs' })).not.toBe(meterEventId(tick));
    expect(meterEventId({ ...tick, resourceUuid: 'u-2' })).not.toBe(meterEventId(tick));
  });

  it('produces a valid ingestion event', () => {
    const event = parseEvent(tickEvent(tick), 0, NOW);
    expect(event).toMatchObject({ id: meterEventId(tick), timeMs: tick.periodStart.getTime(), quantityNano: 30_000_000_000n });
  });
});
