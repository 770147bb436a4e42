import fc from 'fast-check';
import { DEFAULT_IDLE_TIMEOUT_MS, answersRequests, idleDeadline, isIdle, revisionToDeploy, scaledToZeroMessage } from '../../../../domain/workloads/scale-to-zero';

// The deployment workflow's scale-to-zero decisions.

const running = { restartable: true, scale: 'RUNNING' as const, lastUsedAt: 10_000 };

test('a revision that scales to zero is idle one idle period after its last use', () => {
  expect(idleDeadline(running, 5_000)).toBe(15_000);
  expect(isIdle(running, 5_000, 14_999)).toBe(false);
  expect(isIdle(running, 5_000, 15_000)).toBe(true);
});

test('a revision that cannot start again, or is already at zero, is never stopped for being idle', () => {
  expect(idleDeadline({ ...running, restartable: false }, 5_000)).toBe(Infinity);
  expect(idleDeadline({ ...running, scale: 'SCALED_TO_ZERO' }, 5_000)).toBe(Infinity);
  expect(isIdle({ ...running, restartable: false }, 5_000, Number.MAX_SAFE_INTEGER)).toBe(false);
});

test('a touch moves the deadline: only a deadline still past counts', () => {
  fc.assert(
    fc.property(fc.nat(10 ** 9), fc.nat(10 ** 6), fc.integer({ min: 1, max: 10 ** 6 }), fc.nat(2 * 10 ** 6), (lastUsedAt, touchedAfter, idle, elapsed) => {
      const touched = { ...running, lastUsedAt: lastUsedAt + touchedAfter };
      const now = lastUsedAt + elapsed;
      expect(isIdle(touched, idle, now)).toBe(now - touched.lastUsedAt >= idle);
    }),
  );
});

test('requests are answered only by a revision serving, running and not being stopped', () => {
  expect(answersRequests({ serving: true, scale: 'RUNNING', stopping: false })).toBe(true);
  expect(answersRequests({ serving: false, scale: 'RUNNING', stopping: false })).toBe(false);
  expect(answersRequests({ serving: true, scale: 'SCALED_TO_ZERO', stopping: false })).toBe(false);
  expect(answersRequests({ serving: true, scale: 'RUNNING', stopping: true })).toBe(false);
});

test('uploads collapse into the newest, deployed only when newer than the revision serving', () => {
  expect(revisionToDeploy([3, 5, 4], undefined)).toBe(5);
  expect(revisionToDeploy([3, 5, 4], 4)).toBe(5);
  expect(revisionToDeploy([3, 5, 4], 5)).toBeUndefined();
  expect(revisionToDeploy([2], 7)).toBeUndefined();
  expect(revisionToDeploy([], undefined)).toBeUndefined();
});

test('the scale-to-zero event says after how many seconds', () => {
  expect(scaledToZeroMessage(3, DEFAULT_IDLE_TIMEOUT_MS)).toBe('revision 3: scaled to zero after 300 s without requests');
  expect(scaledToZeroMessage(1, 1_499)).toBe('revision 1: scaled to zero after 1 s without requests');
});
