import { knownGeneration, lastChangeAt, noteFreeze, noteObserved, noteThaw, sandboxState, usagePeriods } from '../../../../domain/sandbox/lifecycle';

// The lifecycle workflow's view of its node's freezes: generations decide, not arrival order.

test('a resume heard before the freeze it ends still ends it (the lost-resume race of issue #14)', () => {
  const resumedFirst = noteFreeze(noteThaw({}, { generation: 1, at: 1_050 }), { generation: 0, at: 1_000 });
  const freezeFirst = noteThaw(noteFreeze({}, { generation: 0, at: 1_000 }), { generation: 1, at: 1_050 });
  for (const ledger of [resumedFirst, freezeFirst]) {
    expect(sandboxState(ledger)).toBe('RUNNING');
    expect(lastChangeAt(ledger)).toBe(1_050);
    expect(usagePeriods(ledger, 900, 1_100)).toEqual([
      { from: 900, to: 1_000, state: 'RUNNING' },
      { from: 1_000, to: 1_050, state: 'STANDBY' },
      { from: 1_050, to: 1_100, state: 'RUNNING' },
    ]);
  }
});

test('a freeze not yet ended is STANDBY; an older or repeated thaw changes nothing', () => {
  const ledger = noteThaw(noteFreeze({}, { generation: 1, at: 2_000 }), { generation: 1, at: 1_500 });
  expect(sandboxState(ledger)).toBe('STANDBY');
  expect(knownGeneration(ledger)).toBe(1);
  expect(usagePeriods(ledger, 2_000, 3_000)).toEqual([{ from: 2_000, to: 3_000, state: 'STANDBY' }]);
});

test('the node reporting a thaw nobody signalled makes the sandbox RUNNING from that thaw', () => {
  const frozen = noteFreeze({}, { generation: 0, at: 1_000 });
  const seen = noteObserved(frozen, { generation: 1, frozen: false, frozenAt: 1_000, thawedAt: 1_200 });
  expect(sandboxState(seen)).toBe('RUNNING');
  expect(usagePeriods(seen, 1_000, 1_300)).toEqual([
    { from: 1_000, to: 1_200, state: 'STANDBY' },
    { from: 1_200, to: 1_300, state: 'RUNNING' },
  ]);
});

test('a freeze cycle the workflow never heard of (its answer lost with a worker) is learnt from the node', () => {
  const seen = noteObserved({}, { generation: 1, frozen: false, frozenAt: 1_000, thawedAt: 1_100 });
  expect(sandboxState(seen)).toBe('RUNNING');
  expect(knownGeneration(seen)).toBe(1);
  expect(usagePeriods(seen, 500, 1_200).map((p) => p.state)).toEqual(['RUNNING', 'STANDBY', 'RUNNING']);
});

test('nothing before `from` is metered again, and an empty span has no period', () => {
  const ledger = noteThaw(noteFreeze({}, { generation: 0, at: 1_000 }), { generation: 1, at: 1_100 });
  expect(usagePeriods(ledger, 1_200, 1_300)).toEqual([{ from: 1_200, to: 1_300, state: 'RUNNING' }]);
  expect(usagePeriods(ledger, 1_300, 1_300)).toEqual([]);
});
