import { describeValidation } from '../../../../api/plugins/errors';
import { findUnstorableString } from '../../../../api/plugins/input-hygiene';

describe('unstorable strings', () => {
  test('plain and emoji text passes', () => {
    expect(findUnstorableString({ a: 'héllo 👋', b: ['x', { c: '😀' }] }, 'body')).toBeUndefined();
  });
  test('NUL is found and located', () => {
    expect(findUnstorableString({ metadata: { displayName: 'a\u0000b' } }, 'body')).toBe('body.metadata.displayName contains a NUL character');
  });
  test('unpaired surrogates are found in values, arrays and keys', () => {
    expect(findUnstorableString({ list: ['ok', '\ud800'] }, 'body')).toBe('body.list[1] contains an unpaired surrogate (invalid Unicode)');
    expect(findUnstorableString({ ['\udc00']: 1 }, 'body')).toContain('body key');
  });
});

describe('validation messages', () => {
  test('missing properties are named with their full path', () => {
    expect(describeValidation({ instancePath: '/metadata', keyword: 'required', params: { missingProperty: 'name' } }, 'body')).toBe(
      'body.metadata.name is required',
    );
  });
  test('unknown fields are named', () => {
    expect(describeValidation({ instancePath: '', keyword: 'additionalProperties', params: { additionalProperty: 'rol' } }, 'body')).toBe(
      'body.rol is not a known field',
    );
  });
  test('other failures keep the validator message after the path', () => {
    expect(
      describeValidation({ instancePath: '/metadata/name', keyword: 'pattern', params: {}, message: 'must match pattern "^[a-z]"' }, 'body'),
    ).toBe('body.metadata.name must match pattern "^[a-z]"');
  });
});
