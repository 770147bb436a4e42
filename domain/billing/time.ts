/**
 * UTC time arithmetic of billing: RFC 3339 parsing, bucket alignment (hour, day, Monday week,
 * month) and the window rules of endpoint 14. Times are epoch milliseconds throughout.
 */
export const RESOLUTIONS = ['hourly', 'daily', 'weekly', 'monthly'] as const;
export type Resolution = (typeof RESOLUTIONS)[number];

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;

/** ClickHouse DateTime holds seconds from 1970 up to 2106-02-07; billing times stay inside. */
export const MIN_TIME_MS = 0;
export const MAX_TIME_MS = Date.UTC(2106, 0, 1);

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/;

export interface ParsedTime {
  ms: number;
  /** True when the text carried a zero offset (Z, +00:00 or -00:00). */
  utc: boolean;
}

/** Parses an RFC 3339 date-time; undefined when the text is not one (including impossible dates). */
export function parseRfc3339(text: string): ParsedTime | undefined {
  const canonical = parseCanonicalUtc(text);
  if (canonical !== undefined) return { ms: canonical, utc: true };
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  const second = Number(m[6]);
  // Date.UTC maps years 0-99 to 1900-1999; such dates are outside every supported range anyway.
  if (year < 100) return undefined;
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) || hour > 23 || minute > 59 || second > 59) {
    return undefined;
  }
  const offset = m[8].toUpperCase();
  let offsetMinutes = 0;
  if (offset !== 'Z') {
    const oh = Number(offset.slice(1, 3));
    const om = Number(offset.slice(4, 6));
    if (oh > 23 || om > 59) return undefined;
    offsetMinutes = (offset[0] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  // Milliseconds are kept; finer digits are dropped (truncation toward the past, like the rest).
  const millis = m[7] ? Number(m[7].slice(0, 3).padEnd(3, '0')) : 0;
  const utcMs = Date.UTC(year, month - 1, day, hour, minute, second, millis);
  return { ms: utcMs - offsetMinutes * 60_000, utc: offsetMinutes === 0 };
}

/**
 * The form meters nearly always send, YYYY-MM-DDTHH:MM:SS[.fff]Z, read without a regular
 * expression (ingestion parses millions of them). Undefined for anything else, valid or not:
 * the general parser then decides.
 */
function parseCanonicalUtc(text: string): number | undefined {
  const length = text.length;
  if ((length !== 20 && length !== 24) || text.charCodeAt(length - 1) !== 90 /* Z */) return undefined;
  if (text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45 || text.charCodeAt(10) !== 84 || text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) {
    return undefined;
  }
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  let millis = 0;
  if (length === 24) {
    if (text.charCodeAt(19) !== 46 /* . */) return undefined;
    millis = digits(text, 20, 3);
  }
  if (year < 100 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) || hour > 23 || minute > 59 || second > 59) {
    return undefined;
  }
  if (hour < 0 || minute < 0 || second < 0 || millis < 0) return undefined;
  return Date.UTC(year, month - 1, day, hour, minute, second, millis);
}

/** The decimal number of `count` ASCII digits at `at`, or -1 when any is not a digit. */
function digits(text: string, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    value = value * 10 + d;
  }
  return value;
}

const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysInMonth(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month === 2 && leap ? 29 : MONTH_DAYS[month - 1];
}

/** RFC 3339 in UTC, with milliseconds only when they are not zero. */
export function formatRfc3339(ms: number): string {
  const iso = new Date(ms).toISOString();
  return iso.endsWith('.000Z') ? `${iso.slice(0, -5)}Z` : iso;
}

function floorMod(a: number, b: number): number {
  return ((a % b) + b) % b;
}

/** Start of the bucket of `resolution` that contains `ms`. */
export function bucketStart(ms: number, resolution: Resolution): number {
  switch (resolution) {
    case 'hourly':
      return ms - floorMod(ms, HOUR_MS);
    case 'daily':
      return ms - floorMod(ms, DAY_MS);
    case 'weekly': {
      const day = Math.floor(ms / DAY_MS);
      // 1970-01-01 was a Thursday: three days after a Monday.
      return (day - floorMod(day + 3, 7)) * DAY_MS;
    }
    case 'monthly': {
      const d = new Date(ms);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    }
  }
}

/** Start of the bucket that follows the one starting at `start`. */
export function nextBucketStart(start: number, resolution: Resolution): number {
  switch (resolution) {
    case 'hourly':
      return start + HOUR_MS;
    case 'daily':
      return start + DAY_MS;
    case 'weekly':
      return start + WEEK_MS;
    case 'monthly': {
      const d = new Date(start);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    }
  }
}

/** Every bucket start of the window [start, end), the first one at or before `start`. */
export function bucketStarts(start: number, end: number, resolution: Resolution): number[] {
  const starts: number[] = [];
  for (let b = bucketStart(start, resolution); b < end; b = nextBucketStart(b, resolution)) starts.push(b);
  return starts;
}

/** The same instant one calendar year later (29 February rolls to 1 March). */
export function oneYearAfter(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(
    d.getUTCFullYear() + 1,
    d.getUTCMonth(),
    d.getUTCDate(),
    d.getUTCHours(),
    d.getUTCMinutes(),
    d.getUTCSeconds(),
    d.getUTCMilliseconds(),
  );
}

/** Rule 1: the bucket size applied when the caller names none. */
export function defaultResolution(start: number, end: number): Resolution {
  const length = end - start;
  if (length < 7 * DAY_MS) return 'hourly';
  if (length < 90 * DAY_MS) return 'daily';
  if (end < oneYearAfter(start)) return 'weekly';
  return 'monthly';
}

/** Rule 2: whether an explicit resolution accepts a window this long. */
export function windowWithinCap(start: number, end: number, resolution: Resolution): boolean {
  switch (resolution) {
    case 'hourly':
      return end - start <= 7 * DAY_MS;
    case 'daily':
      return end - start <= 90 * DAY_MS;
    case 'weekly':
      return end <= oneYearAfter(start);
    case 'monthly':
      return true;
  }
}

export const WINDOW_CAPS: Record<Resolution, string> = {
  hourly: '7 days',
  daily: '90 days',
  weekly: '1 year',
  monthly: 'unbounded',
};
