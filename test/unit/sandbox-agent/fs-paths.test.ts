import fc from 'fast-check';
import { PathPolicy, within } from '../../../sandbox-agent/fs-paths';
import { HttpError } from '../../../sandbox-agent/http';

const policy = new PathPolicy(['/home/user', '/workspace', '/tmp/'], ['/proc', '/run/hangar']);

function statusOf(work: () => unknown): number | 'ok' {
  try {
    work();
    return 'ok';
  } catch (err) {
    return (err as HttpError).status;
  }
}

describe('PathPolicy.parse', () => {
  test.each([
    ['', '/'],
    ['workspace/a.txt', '/workspace/a.txt'],
    ['/workspace//a/./b/', '/workspace/a/b'],
    ['workspace/%20spaced%20name', '/workspace/ spaced name'],
    ['workspace/caf%C3%A9', '/workspace/café'],
  ])('%j -> %j', (encoded, expected) => {
    expect(policy.parse(encoded)).toBe(expected);
  });

  test.each(['..', 'workspace/..', 'workspace/../../etc', '%2e%2e/etc', 'workspace%2f..%2f..%2fetc', 'a/%2E%2E', 'a/%00b', '%E0%A4%A'])('%j is refused with 400', (encoded) => {
    expect(statusOf(() => policy.parse(encoded))).toBe(400);
  });

  test('no accepted path ever holds a .. segment or leaves the root', () => {
    const segment = fc.oneof(fc.constantFrom('..', '.', '', '%2e%2e', '%2E.', 'a', 'b%2F..', '%2f', '..%2f'), fc.string({ maxLength: 4 }));
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 8 }), (segments) => {
        let parsed: string;
        try {
          parsed = policy.parse(segments.join('/'));
        } catch (err) {
          return (err as HttpError).status === 400;
        }
        return parsed.startsWith('/') && !parsed.split('/').includes('..') && !parsed.includes('//');
      }),
    );
  });
});

describe('PathPolicy roots', () => {
  test('writable only below a writable root, never in a hidden one', () => {
    expect(policy.isWritable('/workspace')).toBe(true);
    expect(policy.isWritable('/workspace/x/y')).toBe(true);
    expect(policy.isWritable('/tmp/x')).toBe(true);
    expect(policy.isWritable('/workspaces')).toBe(false);
    expect(policy.isWritable('/etc/passwd')).toBe(false);
    expect(statusOf(() => policy.assertWritable('/etc/x', '/etc/x'))).toBe(403);
  });

  test('hidden roots and everything below them', () => {
    expect(policy.isHidden('/proc')).toBe(true);
    expect(policy.isHidden('/proc/1/environ')).toBe(true);
    expect(policy.isHidden('/processes')).toBe(false);
    expect(statusOf(() => policy.assertReadable('/run/hangar/agent.sock', '/x'))).toBe(403);
    expect(statusOf(() => policy.assertReadable('/etc/passwd', '/etc/passwd'))).toBe('ok');
  });

  test('within() matches whole path segments', () => {
    expect(within('/a/b', '/a')).toBe(true);
    expect(within('/ab', '/a')).toBe(false);
    expect(within('/anything', '/')).toBe(true);
  });
});
