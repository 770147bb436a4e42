import fc from 'fast-check';
import {
  ImageReferenceError,
  canonicalImageReference,
  formatImageReference,
  isLoopbackRegistry,
  parseImageReference,
  type ImageReference,
} from '../../../../domain/images/reference';

const HEX = '0123456789abcdef';
const sha256 = `sha256:${'ab12'.repeat(16)}`;

describe('parseImageReference', () => {
  test.each<[string, ImageReference]>([
    ['busybox', { repository: 'busybox' }],
    ['library/busybox:1.36', { repository: 'library/busybox', tag: '1.36' }],
    ['127.0.0.1:5000/team/tools/box:v1.2-rc_3', { registry: '127.0.0.1:5000', repository: 'team/tools/box', tag: 'v1.2-rc_3' }],
    ['localhost/box', { registry: 'localhost', repository: 'box' }],
    ['registry.example.com/a__b/c-d.e', { registry: 'registry.example.com', repository: 'a__b/c-d.e' }],
    [`box@${sha256}`, { repository: 'box', digest: sha256 }],
    [`reg.io:443/box:1@${sha256}`, { registry: 'reg.io:443', repository: 'box', tag: '1', digest: sha256 }],
    ['[::1]:5000/box', { registry: '[::1]:5000', repository: 'box' }],
    // A first component without a dot, port or localhost is a namespace, as Docker reads it.
    ['team/box', { repository: 'team/box' }],
  ])('%s', (text, parsed) => {
    expect(parseImageReference(text)).toEqual(parsed);
  });

  test.each<[string, RegExp]>([
    ['', /is empty/],
    ['Box', /path component 'Box' must be lowercase/],
    ['team//box', /a path component is empty/],
    ['box:', /the tag ''/],
    ['box:-x', /the tag '-x'/],
    [`box:${'t'.repeat(129)}`, /the tag/],
    ['box@sha256:abc', /64 lowercase hexadecimal digits/],
    ['box@md5:abcdef', /must be sha256/],
    ['bad_host.com:99/box', /the registry 'bad_host.com:99'/],
    ['box with space', /white space/],
    ['-box', /path component '-box'/],
    ['a/', /a path component is empty/],
    [`${'a'.repeat(256)}`, /longer than 255/],
  ])('%s is malformed', (text, why) => {
    expect(() => parseImageReference(text)).toThrow(ImageReferenceError);
    expect(() => parseImageReference(text)).toThrow(why);
    // The message names the reference it refuses.
    expect(() => parseImageReference(text)).toThrow(`image reference '${text}' is malformed`);
  });
});

const alnum = fc.stringMatching(/^[a-z0-9]{1,8}$/);
const pathComponent = fc.tuple(alnum, fc.array(fc.tuple(fc.constantFrom('.', '_', '__', '-', '--'), alnum), { maxLength: 2 })).map(([first, rest]) => first + rest.map(([sep, part]) => sep + part).join(''));
const registry = fc.oneof(
  fc.constant('localhost'),
  fc.tuple(fc.stringMatching(/^[a-z][a-z0-9-]{0,6}[a-z0-9]$/), fc.stringMatching(/^[a-z]{2,4}$/)).map(([a, b]) => `${a}.${b}`),
  fc.tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 1, max: 65535 })).map(([n, port]) => `127.0.0.${n}:${port}`),
);
const reference: fc.Arbitrary<ImageReference> = fc.record(
  {
    registry,
    repository: fc.array(pathComponent, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/')),
    tag: fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}$/),
    digest: fc.array(fc.constantFrom(...HEX), { minLength: 64, maxLength: 64 }).map((digits) => `sha256:${digits.join('')}`),
  },
  { requiredKeys: ['repository'] },
);

test('a valid reference parses back into the parts it was written from', () => {
  fc.assert(
    fc.property(reference, (ref) => {
      // Without a registry, a first component that looks like a host would be read as one.
      fc.pre(ref.registry !== undefined || !/[.:]|^localhost$/.test(ref.repository.split('/')[0]) || !ref.repository.includes('/'));
      expect(parseImageReference(formatImageReference(ref))).toEqual(ref);
    }),
  );
});

test('any text either parses or is refused with an ImageReferenceError naming it, never anything else', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 40 }), (text) => {
      try {
        const parsed = parseImageReference(text);
        expect(formatImageReference(parsed)).toBe(text);
      } catch (err) {
        expect(err).toBeInstanceOf(ImageReferenceError);
        expect((err as Error).message).toContain(`'${text}'`);
      }
    }),
  );
});

test('the canonical form spells out the default registry, library/ and latest; a digest pins over a tag', () => {
  expect(canonicalImageReference(parseImageReference('busybox'))).toBe('docker.io/library/busybox:latest');
  expect(canonicalImageReference(parseImageReference('team/box:2'))).toBe('docker.io/team/box:2');
  expect(canonicalImageReference(parseImageReference('127.0.0.1:5000/box'))).toBe('127.0.0.1:5000/box:latest');
  expect(canonicalImageReference(parseImageReference(`127.0.0.1:5000/box:1@${sha256}`))).toBe(`127.0.0.1:5000/box@${sha256}`);
});

test('loopback registries are the ones reached without TLS verification', () => {
  expect(isLoopbackRegistry('127.0.0.1:5000')).toBe(true);
  expect(isLoopbackRegistry('127.3.2.1')).toBe(true);
  expect(isLoopbackRegistry('localhost:443')).toBe(true);
  expect(isLoopbackRegistry('[::1]:5000')).toBe(true);
  expect(isLoopbackRegistry('registry.example.com')).toBe(false);
  expect(isLoopbackRegistry('127.0.0.1.example.com')).toBe(false);
  expect(isLoopbackRegistry('docker.io')).toBe(false);
});
