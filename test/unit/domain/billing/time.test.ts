import fc from 'fast-check';
import {
  bucketStart,
  bucketStarts,
  defaultResolution,
  formatRfc3339,
  nextBucketStart,
  oneYearAfter,
  parseRfc3339,
  RESOLUTIONS,
  windowWithinCap,
} from '../../../../domain/billing/time';
import { planSegments } from '../../../../domain/billing/storage';

const at = (iso: string) => Date.parse(iso);
const DAY = 86_400_000;

describe('parseRfc3339', () => {
  it('reads UTC and offset forms', () => {
    expect(parseRfc3339('2026-04-16T10:20:30Z')).toEqual({ ms: at('2026-04-16T10:20:30Z'), utc: true });
    expect(parseRfc3339('2026-04-16t10:20:30.123z')).toEqual({ ms: at('2026-04-16T10:20:30.123Z'), utc: true });
    expect(parseRfc3339('2026-04-16T10:20:30+00:00')?.utc).toBe(true);
    expect(parseRfc3339('2026-04-16T12:20:30+02:00')).toEqual({ ms: at('2026-04-16T10:20:30Z'), utc: false });
    expect(parseRfc3339('2026-04-16T10:20:30.123456789Z')?.ms).toBe(at('2026-04-16T10:20:30.123Z'));
  });

  it.each([
    '2026-04-16',
    '2026-04-16 10:20:30Z',
    '2026-04-16T10:20:30',
    '2026-02-30T00:00:00Z',
    '2025-02-29T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-04-16T24:00:00Z',
    '2026-04-16T10:60:00Z',
    '2026-04-16T10:20:60Z',
    '2026-04-16T10:20:30+24:00',
    '0050-01-01T00:00:00Z',
    'now',
    '',
  ])('refuses %p', (text) => {
    expect(parseRfc3339(text)).toBeUndefined();
  });

  it('accepts 29 February of a leap year', () => {
    expect(parseRfc3339('2024-02-29T00:00:00Z')?.ms).toBe(at('2024-02-29T00:00:00Z'));
  });

  it('formats without milliseconds unless there are some', () => {
    expect(formatRfc3339(at('2026-04-16T00:00:00Z'))).toBe('2026-04-16T00:00:00Z');
    expect(formatRfc3339(at('2026-04-16T00:00:00.250Z'))).toBe('2026-04-16T00:00:00.250Z');
  });
});

describe('buckets', () => {
  it('aligns to hour, day, Monday and first of month in UTC', () => {
    const t = at('2026-04-16T13:45:12Z'); // a Thursday
    expect(bucketStart(t, 'hourly')).toBe(at('2026-04-16T13:00:00Z'));
    expect(bucketStart(t, 'daily')).toBe(at('2026-04-16T00:00:00Z'));
    expect(bucketStart(t, 'weekly')).toBe(at('2026-04-13T00:00:00Z'));
    expect(bucketStart(t, 'monthly')).toBe(at('2026-04-01T00:00:00Z'));
    // A Monday is its own week start; a Sunday belongs to the Monday before.
    expect(bucketStart(at('2026-04-13T00:00:00Z'), 'weekly')).toBe(at('2026-04-13T00:00:00Z'));
    expect(bucketStart(at('2026-04-19T23:59:59Z'), 'weekly')).toBe(at('2026-04-13T00:00:00Z'));
    expect(bucketStart(at('1970-01-01T05:00:00Z'), 'weekly')).toBe(at('1969-12-29T00:00:00Z'));
  });

  it('steps months of different lengths', () => {
    expect(nextBucketStart(at('2024-01-01T00:00:00Z'), 'monthly')).toBe(at('2024-02-01T00:00:00Z'));
    expect(nextBucketStart(at('2024-02-01T00:00:00Z'), 'monthly')).toBe(at('2024-03-01T00:00:00Z'));
    expect(nextBucketStart(at('2024-12-01T00:00:00Z'), 'monthly')).toBe(at('2025-01-01T00:00:00Z'));
  });

  it('lists every bucket of the window, the first one starting before a mid-bucket start', () => {
    expect(bucketStarts(at('2026-04-16T10:30:00Z'), at('2026-04-16T13:00:00Z'), 'hourly')).toEqual([
      at('2026-04-16T10:00:00Z'),
      at('2026-04-16T11:00:00Z'),
      at('2026-04-16T12:00:00Z'),
    ]);
    expect(bucketStarts(at('2026-04-16T10:30:00Z'), at('2026-04-16T13:00:01Z'), 'hourly')).toHaveLength(4);
    expect(bucketStarts(at('2026-01-31T00:00:00Z'), at('2026-04-01T00:00:00Z'), 'monthly')).toEqual([
      at('2026-01-01T00:00:00Z'),
      at('2026-02-01T00:00:00Z'),
      at('2026-03-01T00:00:00Z'),
    ]);
  });

  it('property: buckets are aligned, consecutive and cover the window exactly', () => {
    const lo = Date.UTC(1971, 0, 1);
    const hi = Date.UTC(2100, 0, 1);
    const maxDays = { hourly: 8, daily: 91, weekly: 370, monthly: 800 };
    fc.assert(
      fc.property(fc.integer({ min: lo, max: hi }), fc.double({ min: 0, max: 1, noNaN: true }), fc.constantFrom(...RESOLUTIONS), (start, share, res) => {
        const end = start + 1 + Math.floor(share * maxDays[res] * DAY);
        const starts = bucketStarts(start, end, res);
        const aligned = starts.every((b, i) => bucketStart(b, res) === b && (i === 0 || b === nextBucketStart(starts[i - 1], res)));
        expect(aligned).toBe(true);
        expect(starts[0]).toBeLessThanOrEqual(start);
        expect(nextBucketStart(starts[0], res)).toBeGreaterThan(start);
        expect(starts[starts.length - 1]).toBeLessThan(end);
        expect(nextBucketStart(starts[starts.length - 1], res)).toBeGreaterThanOrEqual(end);
      }),
    );
  });
});

describe('window rules', () => {
  const start = at('2026-01-01T00:00:00Z');

  it('chooses the default resolution from the window length', () => {
    expect(defaultResolution(start, start + 7 * DAY - 1)).toBe('hourly');
    expect(defaultResolution(start, start + 7 * DAY)).toBe('daily');
    expect(defaultResolution(start, start + 90 * DAY - 1)).toBe('daily');
    expect(defaultResolution(start, start + 90 * DAY)).toBe('weekly');
    expect(defaultResolution(start, at('2026-12-31T23:59:59Z'))).toBe('weekly');
    expect(defaultResolution(start, at('2027-01-01T00:00:00Z'))).toBe('monthly');
  });

  it('caps explicit resolutions, the cap itself included', () => {
    expect(windowWithinCap(start, start + 7 * DAY, 'hourly')).toBe(true);
    expect(windowWithinCap(start, start + 7 * DAY + 1000, 'hourly')).toBe(false);
    expect(windowWithinCap(start, start + 90 * DAY, 'daily')).toBe(true);
    expect(windowWithinCap(start, start + 90 * DAY + 1000, 'daily')).toBe(false);
    expect(windowWithinCap(start, at('2027-01-01T00:00:00Z'), 'weekly')).toBe(true);
    expect(windowWithinCap(start, at('2027-01-01T00:00:01Z'), 'weekly')).toBe(false);
    expect(windowWithinCap(start, at('2100-01-01T00:00:00Z'), 'monthly')).toBe(true);
  });

  it('counts a year in calendar terms, leap days included', () => {
    expect(oneYearAfter(at('2024-01-01T00:00:00Z'))).toBe(at('2025-01-01T00:00:00Z'));
    expect(oneYearAfter(at('2024-02-29T12:00:00Z'))).toBe(at('2025-03-01T12:00:00Z'));
    expect(windowWithinCap(at('2024-01-01T00:00:00Z'), at('2025-01-01T00:00:00Z'), 'weekly')).toBe(true);
  });
});

describe('planSegments', () => {
  const s = (iso: string) => Date.parse(iso) / 1000;

  it('reads sub-hour edges raw, whole hours hourly and whole days daily', () => {
    expect(planSegments(s('2026-04-14T10:30:00Z'), s('2026-04-17T05:15:00Z'), true)).toEqual([
      { source: 'raw', from: s('2026-04-14T10:30:00Z'), to: s('2026-04-14T11:00:00Z') },
      { source: 'hourly', from: s('2026-04-14T11:00:00Z'), to: s('2026-04-15T00:00:00Z') },
      { source: 'daily', from: s('2026-04-15T00:00:00Z'), to: s('2026-04-17T00:00:00Z') },
      { source: 'hourly', from: s('2026-04-17T00:00:00Z'), to: s('2026-04-17T05:00:00Z') },
      { source: 'raw', from: s('2026-04-17T05:00:00Z'), to: s('2026-04-17T05:15:00Z') },
    ]);
  });

  it('never uses the daily table for hourly buckets, and a window inside one hour is all raw', () => {
    expect(planSegments(s('2026-04-14T00:00:00Z'), s('2026-04-16T00:00:00Z'), false)).toEqual([
      { source: 'hourly', from: s('2026-04-14T00:00:00Z'), to: s('2026-04-16T00:00:00Z') },
    ]);
    expect(planSegments(s('2026-04-14T10:10:00Z'), s('2026-04-14T10:50:00Z'), true)).toEqual([
      { source: 'raw', from: s('2026-04-14T10:10:00Z'), to: s('2026-04-14T10:50:00Z') },
    ]);
  });

  it('reads pending hours (without a trusted rollup) raw, and their days from hours', () => {
    const pending = new Set([s('2026-04-15T13:00:00Z'), s('2026-04-15T14:00:00Z'), s('2026-04-20T00:00:00Z')]);
    expect(planSegments(s('2026-04-14T10:30:00Z'), s('2026-04-17T05:15:00Z'), true, pending)).toEqual([
      { source: 'raw', from: s('2026-04-14T10:30:00Z'), to: s('2026-04-14T11:00:00Z') },
      { source: 'hourly', from: s('2026-04-14T11:00:00Z'), to: s('2026-04-15T13:00:00Z') },
      { source: 'raw', from: s('2026-04-15T13:00:00Z'), to: s('2026-04-15T15:00:00Z') },
      { source: 'hourly', from: s('2026-04-15T15:00:00Z'), to: s('2026-04-16T00:00:00Z') },
      { source: 'daily', from: s('2026-04-16T00:00:00Z'), to: s('2026-04-17T00:00:00Z') },
      { source: 'hourly', from: s('2026-04-17T00:00:00Z'), to: s('2026-04-17T05:00:00Z') },
      { source: 'raw', from: s('2026-04-17T05:00:00Z'), to: s('2026-04-17T05:15:00Z') },
    ]);
  });

  it('property: segments tile the window without gaps or overlaps, each aligned to its table, pending hours raw', () => {
    const lo = s('2020-01-01T00:00:00Z');
    const hours = fc.array(fc.integer({ min: 0, max: 40 * 24 }), { maxLength: 6 });
    fc.assert(
      fc.property(fc.integer({ min: lo, max: lo + 400 * 86_400 }), fc.integer({ min: 1, max: 30 * 86_400 }), fc.boolean(), hours, (from, length, daily, offsets) => {
        const pending = new Set(offsets.map((k) => Math.floor(from / 3600) * 3600 + k * 3600));
        const segments = planSegments(from, from + length, daily, pending);
        for (const seg of segments) {
          if (seg.source === 'raw') continue;
          for (const hour of pending) {
            const span = seg.source === 'daily' ? [hour - (hour % 86_400), hour - (hour % 86_400) + 86_400] : [hour, hour + 3600];
            // No rollup segment covers a pending hour (for daily: any hour of its day).
            expect(seg.to <= span[0] || seg.from >= span[1]).toBe(true);
          }
        }
        expect(segments[0].from).toBe(from);
        expect(segments[segments.length - 1].to).toBe(from + length);
        for (let i = 0; i < segments.length; i++) {
          const seg = segments[i];
          expect(seg.from).toBeLessThan(seg.to);
          if (i > 0) expect(seg.from).toBe(segments[i - 1].to);
          if (seg.source === 'hourly') expect([seg.from % 3600, seg.to % 3600]).toEqual([0, 0]);
          if (seg.source === 'daily') expect([seg.from % 86_400, seg.to % 86_400, daily]).toEqual([0, 0, true]);
        }
      }),
    );
  });
});

describe('parseRfc3339 on the canonical UTC form', () => {
  it('agrees with the general parser and Date.parse for any instant', () => {
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(100, 0, 1), max: Date.UTC(2105, 11, 31) }), fc.boolean(), (ms, withMillis) => {
        const iso = new Date(ms).toISOString();
        const text = withMillis ? iso : iso.replace(/\.\d{3}Z$/, 'Z');
        const expected = withMillis ? ms : ms - (ms % 1000 + 1000) % 1000;
        expect(parseRfc3339(text)).toEqual({ ms: expected, utc: true });
        // The same instant in the long form takes the general path.
        expect(parseRfc3339(text.replace('Z', '+00:00'))).toEqual({ ms: expected, utc: true });
      }),
    );
  });

  it('leaves impossible or malformed canonical-length text to the general parser, which refuses it', () => {
    for (const text of ['2026-02-30T00:00:00Z', '2026-13-01T00:00:00Z', '2026-01-01T24:00:00Z', '2026-01-01T00:60:00Z', '2026-01-01T00:00:60Z', '2026-01-01T0a:00:00Z', '2026-01-01T00:00:00.1aZ', '2026-01-01 00:00:00Z', '0099-01-01T00:00:00Z']) {
      expect(parseRfc3339(text)).toBeUndefined();
    }
    expect(parseRfc3339('2026-01-01t00:00:00z')).toEqual({ ms: Date.UTC(2026, 0, 1), utc: true });
  });
});
