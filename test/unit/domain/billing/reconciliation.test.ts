import fc from 'fast-check';
import type { UsageTick } from '../../../../domain/billing/metering';
import { DEFAULT_RECONCILE_OPTIONS, reconcile, type BilledUsage, type StateInterval } from '../../../../domain/billing/reconciliation';
import { customDomainUsageTicks } from '../../../../domain/custom-domain/custom-domain';
import { sandboxUsageTicks } from '../../../../domain/sandbox/metering';
import { volumeUsageTicks } from '../../../../domain/volume/volume';
import { workloadUsageTicks } from '../../../../domain/workloads/metering';

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 1, 12, 0, 0, 0);
const ref = { workspace: 'ws', resourceName: 'r', resourceUuid: '5f0c6a55-2f86-4c1b-9f26-8f1f8c2d7a01' };

/** One state of a simulated resource: how long, and the facts the history records for it. */
interface Segment {
  state: string;
  memoryMb: number;
  storedBytes: number;
  ms: number;
}

type Kind = 'sandbox' | 'agent' | 'volume' | 'custom_domain';

/** What the runtimes' meters record for one period in that state, through the real tick functions. */
function ticksOf(kind: Kind, segment: Segment, from: number, to: number): UsageTick[] {
  const base = { accountId: 'acc', from, to };
  const key = { id: ref.resourceUuid, workspace: ref.workspace, workspaceId: 'w-1', name: ref.resourceName };
  switch (kind) {
    case 'sandbox':
      return sandboxUsageTicks({ ...base, key, state: segment.state as 'RUNNING' | 'STANDBY', memoryMb: segment.memoryMb, frozenBytes: 3e6, diskBytes: 5e6 });
    case 'agent':
      return workloadUsageTicks({ ...base, key: { ...key, kind: 'agents' }, memoryMb: segment.state === 'RUNNING' ? segment.memoryMb : 0, bundleBytes: segment.storedBytes });
    case 'volume':
      return volumeUsageTicks({ ...base, key, sizeMb: segment.storedBytes / 2 ** 20 });
    case 'custom_domain':
      return customDomainUsageTicks({ ...base, key });
  }
}

/**
 * A resource's life as its lifecycle workflow meters it: a period at every state change and at
 * least every minute, the last one at deletion (none after `now` for one still running), event
 * times kept to the second as ClickHouse keeps them. The history records the same states.
 */
function simulate(kind: Kind, segments: Segment[], deleted: boolean) {
  const intervals: StateInterval[] = [];
  const billed: BilledUsage[] = [];
  let at = T0;
  segments.forEach((segment, index) => {
    const end = at + segment.ms;
    const open = !deleted && index === segments.length - 1;
    intervals.push({ ...ref, resourceType: kind, state: segment.state, memoryMb: segment.memoryMb, storedBytes: segment.storedBytes, startedAt: at, endedAt: open ? undefined : end });
    for (let from = at; from < end; from += MINUTE) {
      const to = Math.min(from + MINUTE, end);
      if (open && to === end) break; // the period in progress is not billed yet
      for (const tick of ticksOf(kind, segment, from, to)) {
        billed.push({ ...ref, resourceType: kind, billingDimension: tick.billingDimension, at: Math.floor(from / 1000) * 1000, quantity: tick.quantity });
      }
    }
    at = end;
  });
  return { intervals, billed, end: at };
}

const kinds = fc.constantFrom<Kind>('sandbox', 'agent', 'volume', 'custom_domain');
const segmentArb = (kind: Kind) =>
  fc.record({
    state: kind === 'volume' ? fc.constant('DEPLOYED') : kind === 'custom_domain' ? fc.constant('ACTIVE') : kind === 'sandbox' ? fc.constantFrom('RUNNING', 'STANDBY') : fc.constantFrom('RUNNING', 'STOPPED'),
    memoryMb: fc.constantFrom(256, 1024, 4096),
    storedBytes: fc.integer({ min: 1, max: 4096 }).map((mb) => mb * 2 ** 20),
    // Odd milliseconds: periods start anywhere within a second.
    ms: fc.integer({ min: 1_500, max: 20 * MINUTE }),
  });
const lives = kinds.chain((kind) => fc.record({ kind: fc.constant(kind), segments: fc.array(segmentArb(kind), { minLength: 1, maxLength: 8 }), deleted: fc.boolean() }));

/** A window of the check: from anywhere before or inside the life, to its end or later (never past now). */
function windowOf(life: { end: number; deleted: boolean }, startOffset: number, endOffset: number) {
  const since = T0 + startOffset;
  const until = life.deleted ? Math.max(since + MINUTE, life.end + endOffset) : life.end;
  return { ...DEFAULT_RECONCILE_OPTIONS, since, until: Math.max(until, since + 1) };
}

test('honest metering agrees with the state history, whatever the window', () => {
  fc.assert(
    fc.property(lives, fc.integer({ min: -2 * 3_600_000, max: 3_600_000 }), fc.integer({ min: -30 * MINUTE, max: 2 * 3_600_000 }), ({ kind, segments, deleted }, startOffset, endOffset) => {
      const life = simulate(kind, segments, deleted);
      const report = reconcile({ intervals: life.intervals, executions: [] }, life.billed, windowOf({ end: life.end, deleted }, startOffset, endOffset));
      expect(report.disagreements).toEqual([]);
    }),
    { numRuns: 2_000 },
  );
});

test('a bill changed by more than the tolerance is reported: an event lost, or one counted twice', () => {
  fc.assert(
    fc.property(lives, fc.nat(), fc.boolean(), ({ kind, segments }, pick, duplicate) => {
      // Deleted long before the check, with the whole life in the window: every event is compared.
      const life = simulate(kind, segments, true);
      const options = { ...DEFAULT_RECONCILE_OPTIONS, since: T0 - 3_600_000, until: life.end + 3_600_000 };
      const reconciled = ['sandbox_compute_runtime_gbs', 'agent_compute_runtime_gbs', 'agent_image_storage_gbs', 'volume_storage_gbs', 'custom_domain_active_time_hours'];
      const candidates = life.billed.filter((b) => reconciled.includes(b.billingDimension));
      fc.pre(candidates.length > 0);
      const victim = candidates[pick % candidates.length];
      const total = candidates.filter((b) => b.billingDimension === victim.billingDimension).reduce((s, b) => s + b.quantity, 0);
      const rate = Math.max(...life.intervals.map((i) => (victim.billingDimension === 'custom_domain_active_time_hours' ? 1 / 3600 : i.memoryMb / 1024 + i.storedBytes / 2 ** 30)));
      // Only changes the check promises to see: over 1% of the total and over a second of usage.
      fc.pre(victim.quantity > 0.011 * (total + victim.quantity) && victim.quantity > rate * 1.01);
      const billed = duplicate ? [...life.billed, { ...victim }] : life.billed.filter((b) => b !== victim);
      const report = reconcile({ intervals: life.intervals, executions: [] }, billed, options);
      expect(report.disagreements).toEqual([
        expect.objectContaining({ resourceUuid: ref.resourceUuid, billingDimension: victim.billingDimension, reason: duplicate ? 'billed more than the state history says' : 'billed less than the state history says' }),
      ]);
    }),
    { numRuns: 1_000 },
  );
});

test('a resource billed without any state history, and one whose bills stopped, are reported', () => {
  const stray: BilledUsage = { ...ref, resourceUuid: 'c0ffee00-0000-4000-8000-000000000000', resourceType: 'volume', billingDimension: 'volume_storage_gbs', at: T0, quantity: 5 };
  const life = simulate('volume', [{ state: 'DEPLOYED', memoryMb: 0, storedBytes: 2 ** 30, ms: 30 * MINUTE }], false);
  // Metering stopped after ten minutes while the volume lives on.
  const billed = [...life.billed.filter((b) => b.at < T0 + 10 * MINUTE), stray];
  const report = reconcile({ intervals: life.intervals, executions: [] }, billed, { ...DEFAULT_RECONCILE_OPTIONS, since: T0 - MINUTE, until: life.end });
  expect(report.disagreements).toEqual([
    expect.objectContaining({ resourceUuid: ref.resourceUuid, reason: `not billed since ${new Date(T0 + 9 * MINUTE).toISOString()}` }),
    expect.objectContaining({ resourceUuid: stray.resourceUuid, reason: 'billed, but no state history for it in the window', billed: 5, expected: 0 }),
  ]);
});

test('a job execution is billed once for its memory times its task seconds', () => {
  const execution = { ...ref, resourceType: 'job' as const, startedAt: T0, completedAt: T0 + 20_000, memoryMb: 512, taskSeconds: 30 };
  const options = { ...DEFAULT_RECONCILE_OPTIONS, since: T0 - MINUTE, until: T0 + 10 * MINUTE };
  const bill = (quantity: number): BilledUsage => ({ ...ref, resourceType: 'job', billingDimension: 'job_compute_runtime_gbs', at: T0, quantity });
  expect(reconcile({ intervals: [], executions: [execution] }, [bill(15)], options).disagreements).toEqual([]);
  expect(reconcile({ intervals: [], executions: [execution] }, [bill(15), bill(15)], options).disagreements).toHaveLength(1);
  expect(reconcile({ intervals: [], executions: [execution] }, [], options).disagreements).toEqual([expect.objectContaining({ billed: 0, expected: 15 })]);
  // Finished moments ago: its bill may still be on its way, so it is not judged yet.
  expect(reconcile({ intervals: [], executions: [{ ...execution, completedAt: options.until - 1_000 }] }, [], options).disagreements).toEqual([]);
});
