import { parseDurationSeconds } from '../../../domain/duration';
import { isValidName, nameProblem } from '../../../domain/names';

describe('resource names', () => {
  test.each(['a', 'agent-1', 'my-agent', 'a'.repeat(49), 'x0-'])('%p is valid', (name) => expect(isValidName(name)).toBe(true));
  test.each(['', '1agent', '-a', 'Agent', 'a_b', 'a.b', 'a b', 'é', 'a'.repeat(50), "a'; DROP TABLE resources; --", 'a\u0000'])(
    '%p is invalid',
    (name) => expect(isValidName(name)).toBe(false),
  );
  test('problems name the field', () => {
    expect(nameProblem('metadata.name', undefined)).toBe('metadata.name is required');
    expect(nameProblem('metadata.name', 'a'.repeat(50))).toContain('at most 49');
    expect(nameProblem('metadata.name', 'Bad')).toContain('lowercase');
    expect(nameProblem('metadata.name', 'good')).toBeUndefined();
  });
});

describe('durations', () => {
  test.each([
    ['90s', 90],
    ['15m', 900],
    ['24h', 86_400],
    ['30d', 2_592_000],
    ['2w', 1_209_600],
  ])('%s is %d seconds', (text, seconds) => expect(parseDurationSeconds(text)).toBe(seconds));
  test.each(['', '1', 'h', '1y', '-1h', '1.5h', '1 h', '9999999999s'])('%p is malformed', (text) =>
    expect(parseDurationSeconds(text)).toBeUndefined(),
  );
});
