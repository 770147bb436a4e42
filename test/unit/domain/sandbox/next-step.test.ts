import fc from 'fast-check';
import { METER_INTERVAL_MS } from '../../../../domain/billing/meter-schedule';
import { MIN_WAIT_MS, idlePeriodOver, nextSandboxStep, type SandboxWatch } from '../../../../domain/sandbox/next-step';

// What the sandbox lifecycle workflow does next: book-keeping first, then expiry, then a wait.

const now = 1_000_000;
const quiet: SandboxWatch = {
  ledger: {},
  askNode: false,
  meteredUntil: now - 10_000,
  persistedState: 'RUNNING',
  lastUsedAt: now - 2_000,
  idleTimeoutMs: 30_000,
  expiry: undefined,
};
const frozen = { frozen: { generation: 0, at: now - 20_000 } };

test('a RUNNING sandbox with nothing to record waits for its idle deadline, then freezes if idle', () => {
  expect(nextSandboxStep(quiet, now)).toEqual({ do: 'wait', ms: 28_000, freezeWhenIdle: true });
  expect(idlePeriodOver(quiet.lastUsedAt, quiet.idleTimeoutMs, now + 27_999)).toBe(false);
  expect(idlePeriodOver(quiet.lastUsedAt, quiet.idleTimeoutMs, now + 28_000)).toBe(true);
});

test('the wait ends at the next metering or the expiry when that comes first', () => {
  expect(nextSandboxStep({ ...quiet, idleTimeoutMs: 600_000 }, now)).toEqual({ do: 'wait', ms: METER_INTERVAL_MS - 10_000, freezeWhenIdle: true });
  expect(nextSandboxStep({ ...quiet, expiry: { at: now + 5_000, reason: 'ttl 1h reached' } }, now)).toEqual({ do: 'wait', ms: 5_000, freezeWhenIdle: true });
});

test('a STANDBY sandbox waits for the metering or the expiry, never to freeze again', () => {
  const watch = { ...quiet, ledger: frozen, meteredUntil: now - 5_000, persistedState: 'STANDBY' as const };
  expect(nextSandboxStep(watch, now)).toEqual({ do: 'wait', ms: METER_INTERVAL_MS - 5_000, freezeWhenIdle: false });
});

test('a deadline closer than the shortest wait is checked that much later', () => {
  expect(nextSandboxStep({ ...quiet, lastUsedAt: now - 29_990 }, now)).toEqual({ do: 'wait', ms: MIN_WAIT_MS, freezeWhenIdle: true });
});

test('an expiry reached deletes the sandbox, with its reason', () => {
  expect(nextSandboxStep({ ...quiet, expiry: { at: now, reason: 'idle for 30m' } }, now)).toEqual({ do: 'expire', reason: 'expired: idle for 30m' });
});

test('book-keeping comes first, in order: ask the node, meter a change, meter the interval, persist the state', () => {
  const everything: SandboxWatch = { ...quiet, askNode: true, ledger: frozen, meteredUntil: now - 90_000, persistedState: 'RUNNING', expiry: { at: now, reason: 'x' } };
  expect(nextSandboxStep(everything, now)).toEqual({ do: 'observe-node' });
  expect(nextSandboxStep({ ...everything, askNode: false }, now)).toEqual({ do: 'meter', until: now - 20_000 });
  expect(nextSandboxStep({ ...everything, askNode: false, ledger: { frozen: { generation: 0, at: now - 90_000 } } }, now)).toEqual({ do: 'meter-to-node-word' });
  expect(nextSandboxStep({ ...everything, askNode: false, ledger: {}, meteredUntil: now - 90_000 }, now)).toEqual({ do: 'meter', until: now });
  expect(nextSandboxStep({ ...everything, askNode: false, meteredUntil: now - 1_000 }, now)).toEqual({ do: 'persist-state', state: 'STANDBY' });
});

test('whatever the workflow knows, a wait is at least the shortest and never passes a deadline further than that', () => {
  const watchArb = fc.record({
    ledger: fc.constantFrom({}, frozen, { ...frozen, thawed: { generation: 1, at: now - 10_000 } }),
    askNode: fc.boolean(),
    meteredUntil: fc.integer({ min: now - 120_000, max: now }),
    persistedState: fc.constantFrom<'RUNNING' | 'STANDBY' | undefined>('RUNNING', 'STANDBY', undefined),
    lastUsedAt: fc.integer({ min: now - 600_000, max: now }),
    idleTimeoutMs: fc.integer({ min: 1_000, max: 600_000 }),
    expiry: fc.option(fc.record({ at: fc.integer({ min: now - 1_000, max: now + 600_000 }), reason: fc.constant('ttl') }), { nil: undefined }),
  });
  fc.assert(
    fc.property(watchArb, (watch) => {
      const step = nextSandboxStep(watch, now);
      if (step.do !== 'wait') return;
      const deadlines = [watch.meteredUntil + METER_INTERVAL_MS, watch.expiry?.at ?? Infinity];
      if (step.freezeWhenIdle) deadlines.push(watch.lastUsedAt + watch.idleTimeoutMs);
      expect(step.ms).toBeGreaterThanOrEqual(MIN_WAIT_MS);
      expect(now + step.ms).toBeLessThanOrEqual(Math.max(now + MIN_WAIT_MS, Math.min(...deadlines)));
      // A wait is the last resort: nothing was left to record, and no expiry was due.
      expect(watch.askNode).toBe(false);
      expect(watch.expiry === undefined || watch.expiry.at > now).toBe(true);
    }),
  );
});
