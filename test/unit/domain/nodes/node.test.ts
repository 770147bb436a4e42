import { freeMemoryBytes, nodeState, parseNodeLabels, UNREACHABLE_AFTER_SECONDS } from '../../../../domain/nodes/node';
import { sandboxLoad } from '../../../../runtime/node-heartbeat';

test('a node is READY while heard from within 10 s, UNREACHABLE after, LOST past the operator’s limit', () => {
  const states = [0, 9.9, 10, 10.01, 59, 60, 60.5, 3600].map((silent) => [silent, nodeState(silent, 60)]);
  expect(states).toEqual([
    [0, 'READY'],
    [9.9, 'READY'],
    [UNREACHABLE_AFTER_SECONDS, 'READY'],
    [10.01, 'UNREACHABLE'],
    [59, 'UNREACHABLE'],
    [60, 'UNREACHABLE'],
    [60.5, 'LOST'],
    [3600, 'LOST'],
  ]);
});

test('free memory is the total less what the sandboxes’ limits commit, never below zero', () => {
  const capacity = { memoryBytes: 8 * 2 ** 30, cpus: 2, diskBytes: 0 };
  expect(freeMemoryBytes(capacity, { sandboxes: 3, memoryCommittedBytes: 3 * 2 ** 30, diskFreeBytes: 0 })).toBe(5 * 2 ** 30);
  expect(freeMemoryBytes(capacity, { sandboxes: 9, memoryCommittedBytes: 9 * 2 ** 30, diskFreeBytes: 0 })).toBe(0);
});

test('stopped sandboxes hold no memory; running and frozen ones commit their limits', () => {
  const load = sandboxLoad([
    { state: 'running', memoryMb: 512 },
    { state: 'frozen', memoryMb: 256 },
    { state: 'stopped', memoryMb: 4096 },
  ]);
  expect(load).toEqual({ sandboxes: 2, memoryCommittedBytes: 768 * 2 ** 20 });
});

describe('node labels', () => {
  test('key=value pairs, comma separated, blanks ignored', () => {
    expect(parseNodeLabels('')).toEqual({});
    expect(parseNodeLabels(' zone=eu-west-1a, gpu=none ,tier=')).toEqual({ zone: 'eu-west-1a', gpu: 'none', tier: '' });
  });

  test.each([
    ['zone', "'zone' is not a label"],
    ['Zone=a', "'Zone=a' is not a label"],
    ['zone=a b', "'zone=a b' is not a label"],
    ['=a', "'=a' is not a label"],
    ['zone=a,zone=b', "label 'zone' is given twice"],
  ])('%s is refused, naming it', (text, message) => {
    expect(() => parseNodeLabels(text)).toThrow(message);
  });
});
