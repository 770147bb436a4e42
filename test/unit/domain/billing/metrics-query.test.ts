import { decodeCursor, encodeCursor, queryFingerprint } from '../../../../domain/billing/cursor';
import { InvalidInput } from '../../../../domain/billing/errors';
import { parseGroupBy, parseMetricsQuery, parseWindowQuery, type MetricsQuery } from '../../../../domain/billing/metrics-query';

const window = { startTime: '2026-04-01T00:00:00Z', endTime: '2026-04-02T00:00:00Z' };

/** The parameter an invalid query is blamed on, and its message. */
function rejection(raw: Record<string, unknown>): { parameter: string; message: string } {
  try {
    parseMetricsQuery(raw);
  } catch (err) {
    if (err instanceof InvalidInput) return { parameter: err.parameter, message: err.message };
    throw err;
  }
  throw new Error('query was accepted');
}

describe('parseMetricsQuery', () => {
  it('applies defaults', () => {
    const query = parseMetricsQuery(window);
    expect(query).toMatchObject({
      start: Date.parse(window.startTime),
      end: Date.parse(window.endTime),
      resolution: 'hourly',
      groupBy: [],
      filters: {},
      limit: 100,
    });
    expect(query.cursor).toBeUndefined();
  });

  it.each([
    [{ endTime: window.endTime }, 'startTime', 'required'],
    [{ startTime: window.startTime }, 'endTime', 'required'],
    [{ ...window, startTime: 'yesterday' }, 'startTime', 'RFC 3339'],
    [{ ...window, endTime: '2026-04-02' }, 'endTime', 'RFC 3339'],
    [{ ...window, endTime: '2026-04-02T02:00:00+02:00' }, 'endTime', 'UTC'],
    [{ ...window, endTime: window.startTime }, 'startTime', 'before'],
    [{ startTime: window.endTime, endTime: window.startTime }, 'startTime', 'before'],
    [{ ...window, startTime: '1969-12-31T00:00:00Z' }, 'startTime', 'between'],
    [{ ...window, resolution: 'yearly' }, 'resolution', 'one of'],
    [{ startTime: '2026-01-01T00:00:00Z', endTime: '2026-01-08T00:00:01Z', resolution: 'hourly' }, 'resolution', '7 days'],
    [{ startTime: '2026-01-01T00:00:00Z', endTime: '2026-04-01T00:00:01Z', resolution: 'daily' }, 'resolution', '90 days'],
    [{ startTime: '2026-01-01T00:00:00Z', endTime: '2027-01-01T00:00:01Z', resolution: 'weekly' }, 'resolution', '1 year'],
    [{ ...window, groupBy: 'workspace,resource_type,resource_name,billing_dimension' }, 'groupBy', 'at most 3'],
    [{ ...window, groupBy: 'region' }, 'groupBy', "'region'"],
    [{ ...window, groupBy: 'workspace,workspace' }, 'groupBy', 'twice'],
    [{ ...window, groupBy: '' }, 'groupBy', "''"],
    [{ ...window, groupBy: 'workspace,' }, 'groupBy', "''"],
    [{ ...window, resourceType: 'vm' }, 'resourceType', "'vm'"],
    [{ ...window, billingDimension: 'gpu_seconds' }, 'billingDimension', "'gpu_seconds'"],
    [{ ...window, resourceName: '' }, 'resourceName', 'characters'],
    [{ ...window, limit: '0' }, 'limit', 'at least 1'],
    [{ ...window, limit: '-5' }, 'limit', 'at least 1'],
    [{ ...window, limit: 'ten' }, 'limit', 'integer'],
    [{ ...window, limit: '2.5' }, 'limit', 'integer'],
    [{ ...window, label: 'team=a' }, 'label', 'unsupported'],
    [{ ...window, unit: 'gbs' }, 'unit', 'unsupported'],
    [{ ...window, groupBy: ['workspace', 'resource_type'] }, 'groupBy', 'once'],
  ])('refuses %j naming %s', (raw, parameter, fragment) => {
    const { parameter: named, message } = rejection(raw);
    expect(named).toBe(parameter);
    expect(message).toContain(parameter);
    expect(message).toContain(fragment);
  });

  it('clamps large limits silently', () => {
    expect(parseMetricsQuery({ ...window, limit: '1000' }).limit).toBe(100);
    expect(parseMetricsQuery({ ...window, limit: '7' }).limit).toBe(7);
  });

  it('takes an explicit resolution within its cap, and chooses one otherwise', () => {
    expect(parseMetricsQuery({ ...window, resolution: 'monthly' }).resolution).toBe('monthly');
    expect(parseMetricsQuery({ startTime: '2026-01-01T00:00:00Z', endTime: '2026-01-08T00:00:00Z', resolution: 'hourly' }).resolution).toBe('hourly');
    expect(parseMetricsQuery({ startTime: '2026-01-01T00:00:00Z', endTime: '2026-03-01T00:00:00Z' }).resolution).toBe('daily');
    expect(parseMetricsQuery({ startTime: '2026-01-01T00:00:00Z', endTime: '2026-06-01T00:00:00Z' }).resolution).toBe('weekly');
    expect(parseMetricsQuery({ startTime: '2020-01-01T00:00:00Z', endTime: '2026-06-01T00:00:00Z' }).resolution).toBe('monthly');
  });

  it('reads filters', () => {
    const query = parseMetricsQuery({
      ...window,
      workspace: 'prod',
      resourceType: 'sandbox',
      resourceName: 'web',
      resourceUuid: 'u-1',
      billingDimension: 'sandbox_compute_runtime_gbs',
    });
    expect(query.filters).toEqual({
      workspace: 'prod',
      resourceType: 'sandbox',
      resourceName: 'web',
      resourceUuid: 'u-1',
      billingDimension: 'sandbox_compute_runtime_gbs',
    });
  });
});

describe('parseGroupBy', () => {
  it('applies the canonical order whatever the order given', () => {
    expect(parseGroupBy('billing_dimension,workspace')).toEqual(['workspace', 'billing_dimension']);
    expect(parseGroupBy(' resource_uuid , resource_type,workspace')).toEqual(['workspace', 'resource_type', 'resource_uuid']);
    expect(parseGroupBy('resource_name')).toEqual(['resource_name']);
  });
});

describe('parseWindowQuery', () => {
  it('takes only a window', () => {
    expect(parseWindowQuery(window)).toEqual({ start: Date.parse(window.startTime), end: Date.parse(window.endTime) });
    expect(() => parseWindowQuery({ ...window, groupBy: 'workspace' })).toThrow(InvalidInput);
    expect(() => parseWindowQuery({ startTime: window.startTime })).toThrow('endTime is required');
  });
});

describe('cursor', () => {
  const query: MetricsQuery = parseMetricsQuery({ ...window, groupBy: 'workspace,resource_name', limit: '10' });
  const fingerprint = queryFingerprint('acc-1', query, undefined);

  it('round-trips the last key of a page', () => {
    const key = ['prod', "we'ird\\name"];
    expect(decodeCursor(encodeCursor(fingerprint, key), fingerprint, 2)).toEqual(key);
  });

  it('is bound to every parameter of the query and to the caller scope', () => {
    const variants = [
      queryFingerprint('acc-2', query, undefined),
      queryFingerprint('acc-1', { ...query, end: query.end + 1000 }, undefined),
      queryFingerprint('acc-1', { ...query, resolution: 'daily' }, undefined),
      queryFingerprint('acc-1', { ...query, groupBy: ['workspace', 'resource_type'] }, undefined),
      queryFingerprint('acc-1', { ...query, filters: { resourceName: 'x' } }, undefined),
      queryFingerprint('acc-1', { ...query, limit: 11 }, undefined),
      queryFingerprint('acc-1', query, ['prod']),
    ];
    expect(new Set([fingerprint, ...variants]).size).toBe(variants.length + 1);
    const cursor = encodeCursor(fingerprint, ['a', 'b']);
    for (const other of variants) expect(() => decodeCursor(cursor, other, 2)).toThrow(InvalidInput);
  });

  it('ignores the cursor itself when fingerprinting', () => {
    expect(queryFingerprint('acc-1', { ...query, cursor: 'abc' }, undefined)).toBe(fingerprint);
  });

  it.each(['', 'not base64!', Buffer.from('{"v":1}').toString('base64url'), Buffer.from('[]').toString('base64url'), 'e30'])(
    'refuses the malformed cursor %p',
    (cursor) => {
      expect(() => decodeCursor(cursor, fingerprint, 2)).toThrow('cursor is invalid');
    },
  );

  it('refuses a key of the wrong shape', () => {
    expect(() => decodeCursor(encodeCursor(fingerprint, ['only-one']), fingerprint, 2)).toThrow(InvalidInput);
    const numeric = Buffer.from(JSON.stringify({ v: 1, q: fingerprint, k: [1, 2] })).toString('base64url');
    expect(() => decodeCursor(numeric, fingerprint, 2)).toThrow(InvalidInput);
  });
});
