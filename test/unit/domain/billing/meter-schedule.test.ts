import fc from 'fast-check';
import { METER_INTERVAL_MS, meterDue, nextMeterAt } from '../../../../domain/billing/meter-schedule';

// When the lifecycle workflows record usage while nothing changes: once an interval.

test('a record is due one interval after the last, and only then', () => {
  expect(nextMeterAt(1_000)).toBe(1_000 + METER_INTERVAL_MS);
  expect(meterDue(1_000, 1_000 + METER_INTERVAL_MS - 1)).toBe(false);
  expect(meterDue(1_000, 1_000 + METER_INTERVAL_MS)).toBe(true);
});

test('nothing billable: no record is ever due', () => {
  expect(nextMeterAt(1_000, false)).toBe(Infinity);
});

test('the deadline and the due check agree at every moment', () => {
  fc.assert(
    fc.property(fc.nat(10 ** 12), fc.nat(10 ** 6), (meteredUntil, later) => {
      expect(meterDue(meteredUntil, meteredUntil + later)).toBe(meteredUntil + later >= nextMeterAt(meteredUntil));
    }),
  );
});
