import fc from 'fast-check';
import { BILLING_DIMENSION_NAMES, BILLING_DIMENSIONS } from '../../../../domain/billing/dimensions';
import { encodeUsageBatch, type UsageBatch } from '../../../../domain/billing/usage-batch';
import { encodeUsageBody, readPlainBody } from '../../../../domain/billing/usage-body';
import { parseUsageEvents } from '../../../../domain/billing/usage-events';

/**
 * A request body is read two ways: straight from its bytes when it is plain (ASCII, no escapes),
 * else through JSON.parse and parseUsageEvents. Whatever the body, the direct reading either
 * declines or gives exactly the batch of the general one.
 */
const NOW = Date.parse('2026-04-16T12:00:00Z');
const ACCOUNT = 'acc-1';
const prices = new Map(BILLING_DIMENSION_NAMES.map((name, i) => [name, 1_000_000n + 7_919n * BigInt(i)]));
const noLegacy = () => 0;

function general(text: string): UsageBatch | Error {
  try {
    return encodeUsageBatch(ACCOUNT, parseUsageEvents(JSON.parse(text), NOW), prices);
  } catch (err) {
    return err as Error;
  }
}

function plain(text: string): UsageBatch | undefined {
  return readPlainBody(ACCOUNT, Buffer.from(text), NOW, prices, noLegacy);
}

function expectSameBatch(actual: UsageBatch, expected: UsageBatch): void {
  expect(actual.size).toBe(expected.size);
  expect(actual.rows.toString()).toBe(expected.rows.toString());
  expect([...actual.rowEnds]).toEqual([...expected.rowEnds]);
  expect(actual.keys.toString('hex')).toBe(expected.keys.toString('hex'));
  expect([...actual.hashes]).toEqual([...expected.hashes]);
  expect([...actual.seconds]).toEqual([...expected.seconds]);
  expect([...actual.workspaces]).toEqual([...expected.workspaces]);
  expect(Array.from({ length: actual.size }, (_, i) => actual.idOf(i))).toEqual(Array.from({ length: expected.size }, (_, i) => expected.idOf(i)));
}

// ---- Plain bodies: what meters send.

const plainChar = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/ @#$%&*()+=[]{}<>?!~`|;,\''.split(''));
const plainText = (min: number, max: number) => fc.string({ unit: plainChar, minLength: min, maxLength: max });
const dimension = fc.constantFrom(...BILLING_DIMENSION_NAMES);
const timeMs = fc.integer({ min: NOW - 400 * 86_400_000, max: NOW + 5 * 60_000 });
const canonicalTime = fc.tuple(timeMs, fc.boolean()).map(([ms, millis]) => {
  const iso = new Date(ms).toISOString();
  return millis ? iso : `${iso.slice(0, 19)}Z`;
});
// Quantities as meters write them, in every JSON number form.
const quantityText = fc.oneof(
  fc.nat({ max: 1_000_000 }).map(String),
  fc.double({ min: 0, max: 1e6, noNaN: true, noDefaultInfinity: true }).map((q) => JSON.stringify(q)),
  fc.tuple(fc.nat({ max: 999 }), fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.nat({ max: 12 })).map(([m, e, sign, power]) => `${m}${e}${sign}${power}`),
  fc.constantFrom('0', '-0', '0.0', '1.5', '0.000000001', '0.0000000005', '1e15', '1000000000000000'),
);

interface EventParts {
  fields: [string, string][];
}

const plainEvent = fc
  .record({
    id: plainText(1, 128),
    timestamp: canonicalTime,
    workspace: fc.constantFrom('prod', 'dev', 'ws-3'),
    resourceName: plainText(1, 40),
    resourceUuid: fc.option(plainText(0, 40), { nil: undefined }),
    billingDimension: dimension,
    quantity: quantityText,
  })
  .chain((event) =>
    fc.shuffledSubarray(
      [
        ['id', JSON.stringify(event.id)],
        ['timestamp', JSON.stringify(event.timestamp)],
        ['workspace', JSON.stringify(event.workspace)],
        ['resourceType', JSON.stringify(BILLING_DIMENSIONS[event.billingDimension].resourceType)],
        ['resourceName', JSON.stringify(event.resourceName)],
        ...(event.resourceUuid === undefined ? [] : [['resourceUuid', JSON.stringify(event.resourceUuid)]]),
        ['billingDimension', JSON.stringify(event.billingDimension)],
        ['quantity', event.quantity],
      ] as [string, string][],
      { minLength: event.resourceUuid === undefined ? 7 : 8 },
    ),
  )
  .map((fields): EventParts => ({ fields }));

const space = fc.constantFrom('', '', '', ' ', '\n', '\t', '\r\n  ');

/** The body's JSON text, with `gap` (whitespace) between tokens. */
function bodyText(events: EventParts[], gaps: string[]): string {
  let n = 0;
  const gap = () => gaps[n++ % gaps.length];
  const event = (parts: EventParts) => `{${gap()}${parts.fields.map(([key, value]) => `"${key}"${gap()}:${gap()}${value}`).join(`${gap()},${gap()}`)}${gap()}}`;
  return `${gap()}{${gap()}"events"${gap()}:${gap()}[${gap()}${events.map(event).join(`${gap()},${gap()}`)}${gap()}]${gap()}}${gap()}`;
}

/** A plain job event with the given id, timestamp and quantity (JSON text). */
function jobEvent(id: string, timestamp: string, quantity = '1'): EventParts {
  return {
    fields: [
      ['id', `"${id}"`],
      ['timestamp', `"${timestamp}"`],
      ['workspace', '"prod"'],
      ['resourceType', '"job"'],
      ['resourceName', '"n"'],
      ['billingDimension', '"job_compute_runtime_gbs"'],
      ['quantity', quantity],
    ],
  };
}

describe('reading a plain body', () => {
  it('reads every plain body itself, into the batch of the general reading', () => {
    fc.assert(
      fc.property(fc.array(plainEvent, { maxLength: 30 }), fc.array(space, { minLength: 1, maxLength: 10 }), (events, gaps) => {
        const text = bodyText(events, gaps);
        const expected = general(text);
        if (expected instanceof Error) throw expected;
        const batch = plain(text);
        expect(batch).toBeDefined();
        expectSameBatch(batch!, expected);
      }),
      { numRuns: 400 },
    );
  });

  it('reads the same event the same way wherever its hour was met before', () => {
    // The reader remembers the hour of the last canonical timestamp: events in that hour, out of
    // it, and back in it again.
    const text = bodyText(
      [
        jobEvent('a', '2026-04-16T10:59:59.999Z'),
        jobEvent('b', '2026-04-16T11:00:00Z'),
        jobEvent('c', '2026-04-16T10:00:00.001Z'),
        jobEvent('d', '2026-04-16T10:30:00+00:00'),
        jobEvent('e', '2026-04-16T10:30:00.5Z'),
        jobEvent('f', '2026-04-16t10:30:01Z'),
      ],
      [''],
    );
    const batch = plain(text);
    expect(batch).toBeDefined();
    expectSameBatch(batch!, general(text) as UsageBatch);
    // An impossible minute in a remembered hour is refused like any other.
    expect(plain(bodyText([jobEvent('a', '2026-04-16T10:59:59Z'), jobEvent('g', '2026-04-16T10:60:00Z')], ['']))).toBeUndefined();
  });
});

// ---- Any body: mistakes, escapes, unicode, odd shapes.

const anyText = fc.oneof(
  plainText(0, 12),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 6 }),
  fc.constantFrom('a"b', 'a\\b', 'tab\there', 'nl\nx', 'del\x7f', 'é', '\ud800', '', 'x'.repeat(129), 'y'.repeat(257)),
);
const anyValue = fc.oneof(
  anyText.map((text) => JSON.stringify(text)),
  quantityText,
  fc.constantFrom('null', 'true', '{}', '[]', '-', '01', '1.', '.5', '1e', '+1', '1e400', '-1', '1e16', '"\\u0041"', '"\\/"'),
);
const anyTimestamp = fc.oneof(
  canonicalTime,
  timeMs.map((ms) => new Date(ms).toISOString().replace('Z', '+00:00')),
  timeMs.map((ms) => new Date(ms).toISOString().toLowerCase()),
  timeMs.map((ms) => new Date(ms).toISOString().replace('.', ',')),
  // Impossible dates, the edges of the future limit (NOW + 5 minutes), out of range, too precise.
  fc.constantFrom(
    '2026-02-30T00:00:00Z',
    '2026-04-16T24:00:00Z',
    '2026-04-16T12:06:00Z',
    '2026-04-16T12:05:00Z',
    '2026-04-16T12:05:00.001Z',
    '2026-04-16T12:05:01Z',
    '2106-01-01T00:00:00Z',
    '0099-01-01T00:00:00Z',
    '2026-04-16T11:00:00.1234567891Z',
  ),
);

const textFields = ['id', 'timestamp', 'workspace', 'resourceType', 'resourceName', 'resourceUuid', 'billingDimension'];
const badQuantity = fc.constantFrom('1e.5', '1e+', '2E-', '-1', '-0.5', '1e16', '1000000000000001', '1e400', '"5"', 'null', '-', '01', '1.', '.5', '1e', '+1', '-01');

/** A mutation of one field of a plain event: its value changed, the key added twice or removed. */
type Mutation =
  | { kind: 'set'; field: string; value: string }
  | { kind: 'twice'; n: number; value?: string }
  | { kind: 'remove'; n: number }
  | { kind: 'rename'; n: number; at: number; to: string };
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), field: fc.constantFrom(...textFields), value: anyText.map((text) => JSON.stringify(text)) }),
  fc.record({ kind: fc.constant('set' as const), field: fc.constant('quantity'), value: fc.oneof(badQuantity, quantityText) }),
  fc.record({ kind: fc.constant('set' as const), field: fc.constant('timestamp'), value: anyTimestamp.map((t) => JSON.stringify(t)) }),
  fc.record({ kind: fc.constant('set' as const), field: fc.constant('resourceType'), value: fc.constantFrom('"sandbox"', '"agent"', '"vm"', '"Sandbox"', '"job"') }),
  fc.record({ kind: fc.constant('set' as const), field: fc.constant('billingDimension'), value: fc.constantFrom('"agent_image_storage_gbs"', '"gpu_gbs"', '"volume_storage_gbs "', '"job_compute_runtime_gbs"') }),
  fc.record({ kind: fc.constant('set' as const), field: fc.constantFrom(...textFields, 'quantity', 'unit', 'Id', 'idx', 'resourceNames', 'events'), value: anyValue }),
  fc.record({ kind: fc.constant('twice' as const), n: fc.nat(), value: fc.option(anyValue, { nil: undefined }) }),
  fc.record({ kind: fc.constant('remove' as const), n: fc.nat() }),
  // A key one character away from a known one.
  fc.record({ kind: fc.constant('rename' as const), n: fc.nat(), at: fc.nat(), to: fc.constantFrom('x', 'D', 'I', 'e', 'T', '_') }),
);

function mutated(event: EventParts, change: Mutation): EventParts {
  const fields = [...event.fields];
  if (change.kind === 'set') {
    const at = fields.findIndex(([key]) => key === change.field);
    if (at >= 0) fields[at] = [change.field, change.value];
    else fields.push([change.field, change.value]);
  } else if (change.kind === 'twice') {
    const [key, value] = fields[change.n % fields.length];
    fields.push([key, change.value ?? value]);
  } else if (change.kind === 'remove') {
    fields.splice(change.n % fields.length, 1);
  } else {
    const n = change.n % fields.length;
    const [key, value] = fields[n];
    const at = change.at % key.length;
    fields[n] = [key.slice(0, at) + change.to + key.slice(at + 1), value];
  }
  return { fields };
}

const oddBody = fc.constantFrom('', '{}', '[]', '{"events":{}}', '{"events":[],"extra":1}', '{"events":[]}x', '{"events":[',
  '{"events":[1]}', '{"events":[{}]}', '\ufeff{"events":[]}', '{"events":[],}', '{"events":[{"id":"a"},]}', '{"events":[] ', 'null');

describe('reading any body', () => {
  it('declines every body it does not read exactly as the general reading does', () => {
    fc.assert(
      fc.property(
        fc.array(plainEvent, { maxLength: 3 }),
        plainEvent,
        mutation,
        fc.array(plainEvent, { maxLength: 3 }),
        fc.array(space, { minLength: 1, maxLength: 5 }),
        (before, event, change, after, gaps) => {
        // One mistake at most in the body, so that the others do not hide it.
        const text = bodyText([...before, mutated(event, change), ...after], gaps);
        const expected = general(text);
        const batch = plain(text);
        if (batch !== undefined) {
          expect(expected).not.toBeInstanceOf(Error);
          expectSameBatch(batch, expected as UsageBatch);
        }
        // What the API runs: the same batch, or the general reading's error.
        if (expected instanceof Error) {
          expect(() => encodeUsageBody(ACCOUNT, Buffer.from(text), NOW, prices)).toThrow(expected.message.includes('JSON') ? /not valid JSON/ : expected.message);
        } else {
          expectSameBatch(encodeUsageBody(ACCOUNT, Buffer.from(text), NOW, prices), expected);
        }
      },
      ),
      { numRuns: 3_000 },
    );
  });

  it('declines odd bodies, and sizes over the limit', () => {
    fc.assert(
      fc.property(oddBody, (text) => {
        expect(plain(text)).toBeUndefined();
      }),
    );
    const event = '{"id":"a","timestamp":"2026-04-16T11:00:00Z","workspace":"p","resourceType":"job","resourceName":"n","billingDimension":"job_compute_runtime_gbs","quantity":1}';
    const many = (n: number) => `{"events":[${new Array(n).fill(event).join(',')}]}`;
    expect(plain(many(10_000))?.size).toBe(10_000);
    expect(plain(many(10_001))).toBeUndefined();
    expect(general(many(10_001))).toBeInstanceOf(Error);
  });

  it('reads ids back from the body, and digests of earlier ledgers on demand', () => {
    const text = bodyText(
      [jobEvent('evt-1', '2026-04-16T11:00:00Z', '2')],
      [''],
    );
    const batch = encodeUsageBody(ACCOUNT, Buffer.from(text), NOW, prices);
    expect(batch.idOf(0)).toBe('evt-1');
    expect(batch.legacyDigest(0)).toBe((general(text) as UsageBatch).legacyDigest(0));
  });
});
