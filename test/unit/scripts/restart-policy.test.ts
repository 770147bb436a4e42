import fc from 'fast-check';
import { decideRestart, describeRestart, NO_CRASH_YET, restartDelayMs, SERVICE_RESTART_POLICY, type Crash, type RestartDecision, type RestartPolicy } from '../../../scripts/restart-policy';

const policy = SERVICE_RESTART_POLICY;
const budget = policy.budget!;

/** Feeds the crashes in order, as a supervisor would, and returns each decision. */
function replay(crashes: Crash[], p: RestartPolicy = policy): RestartDecision[] {
  let state = NO_CRASH_YET;
  return crashes.map((crash) => {
    const next = decideRestart(p, state, crash);
    state = next.state;
    return next.decision;
  });
}

/**
 * Crash sequences as a supervisor sees them: each crash after the previous one by a gap, having
 * run for at most that gap. Gaps from a few ms to several windows, so that both quick crash loops
 * and long healthy runs occur.
 */
const crashSequences = fc
  .array(fc.record({ gap: fc.integer({ min: 0, max: 3 * budget.windowMs }), upShare: fc.double({ min: 0, max: 1, noNaN: true }) }), { minLength: 1, maxLength: 40 })
  .map((steps) => {
    let at = 1_000_000;
    return steps.map(({ gap, upShare }) => {
      at += gap;
      return { at, upForMs: Math.floor(gap * upShare) };
    });
  });

describe('the restart policy of the local services', () => {
  test('the delay starts at 0.5 s, doubles with each crash in a row, and stops growing at the cap', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => restartDelayMs(policy, n))).toEqual([500, 1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
  });

  test('never more restarts within any window than the budget allows', () => {
    fc.assert(
      fc.property(crashSequences, (crashes) => {
        const decisions = replay(crashes);
        const granted = crashes.filter((_, i) => decisions[i].restart).map((c) => c.at);
        for (const end of granted) {
          expect(granted.filter((at) => at > end - budget.windowMs && at <= end).length).toBeLessThanOrEqual(budget.restarts);
        }
      }),
    );
  });

  test('gives up only when the budget is spent: the window before the crash already holds that many restarts', () => {
    fc.assert(
      fc.property(crashSequences, (crashes) => {
        const decisions = replay(crashes);
        let granted: number[] = [];
        crashes.forEach((crash, i) => {
          const inWindow = granted.filter((at) => at > crash.at - budget.windowMs).length;
          const decision = decisions[i];
          expect(decision.restart).toBe(inWindow < budget.restarts);
          if (decision.restart) {
            expect(decision.restartInWindow).toBe(inWindow + 1);
            granted = [...granted, crash.at];
          } else {
            expect(decision.restartsInWindow).toBe(inWindow);
          }
        });
      }),
    );
  });

  test('the delay is the backoff of the current crash series: reset by a long healthy run, within first and cap', () => {
    fc.assert(
      fc.property(crashSequences, (crashes) => {
        const decisions = replay(crashes);
        let series = 0;
        crashes.forEach((crash, i) => {
          series = crash.upForMs >= policy.stableAfterMs ? 1 : series + 1;
          const decision = decisions[i];
          if (!decision.restart) return;
          expect(decision.delayMs).toBe(Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** (series - 1)));
          expect(decision.delayMs).toBeGreaterThanOrEqual(policy.firstDelayMs);
          expect(decision.delayMs).toBeLessThanOrEqual(policy.maxDelayMs);
        });
      }),
    );
  });

  test('a process crashing as fast as it can is given up after exactly the budget of restarts', () => {
    const crashes = Array.from({ length: budget.restarts + 3 }, (_, i) => ({ at: i * 100, upForMs: 50 }));
    const decisions = replay(crashes);
    expect(decisions.map((d) => d.restart)).toEqual([...Array(budget.restarts).fill(true), false, false, false]);
  });

  test('without a budget it never gives up', () => {
    const forever: RestartPolicy = { firstDelayMs: 1_000, maxDelayMs: 30_000, stableAfterMs: 60_000 };
    fc.assert(
      fc.property(crashSequences, (crashes) => {
        expect(replay(crashes, forever).every((d) => d.restart)).toBe(true);
      }),
    );
  });

  test('log lines say which restart of the budget this is', () => {
    expect(describeRestart(policy, 1)).toBe('restart 1 of 5 in 60s');
  });
});
