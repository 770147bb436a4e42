import type { ClickHouseClient } from '@clickhouse/client';
import fc from 'fast-check';
import { sqlLiteral } from '../../../domain/sql-literal';
import { stackClickHouse } from './helpers';

/** What ClickHouse makes of our literals: every value must come back exactly as sent. */
jest.setTimeout(30_000);

let clickhouse: ClickHouseClient;
beforeAll(() => {
  clickhouse = stackClickHouse();
});
afterAll(() => clickhouse.close());

async function roundTrip(values: string[]): Promise<string[]> {
  const result = await clickhouse.query({ query: `SELECT [${values.map(sqlLiteral).join(', ')}] AS v`, format: 'JSONEachRow' });
  const [row] = await result.json<{ v: string[] }>();
  return row.v;
}

it('returns any text unchanged: quotes, backslashes, NUL, control characters, unicode', async () => {
  const fixed = ["'", "\\'", "\\", "x\\", "' OR 1=1 --", "'); DROP TABLE t; --", '\u0000', '\n\r\t\b\f\v', '\u007f', 'é世界🚀', '\\x41', '\\0', '{p:String}', '?'];
  expect(await roundTrip(fixed)).toEqual(fixed);
  await fc.assert(
    fc.asyncProperty(fc.array(fc.string({ unit: 'binary', maxLength: 40 }), { minLength: 1, maxLength: 50 }), async (values) => {
      const wellFormed = values.map((v) => v.replace(/[\ud800-\udfff]/g, '?'));
      expect(await roundTrip(wellFormed)).toEqual(wellFormed);
    }),
    { numRuns: 25 },
  );
});

it('keeps numbers and dates exact', async () => {
  const result = await clickhouse.query({
    query: `SELECT ${sqlLiteral(-42)} AS a, ${sqlLiteral(0.5)} AS b, toString(${sqlLiteral(18446744073709551615n)}) AS c, toUInt32(${sqlLiteral(new Date('2026-04-16T12:34:56Z'))}) AS d, ${sqlLiteral(3)} - ${sqlLiteral(-3)} AS e`,
    format: 'JSONEachRow',
  });
  expect(await result.json()).toEqual([{ a: -42, b: 0.5, c: '18446744073709551615', d: Date.parse('2026-04-16T12:34:56Z') / 1000, e: 6 }]);
});
