import fc from 'fast-check';
import { ApiError } from '../../../../domain/errors';
import { portTarget } from '../../../../domain/sandbox/port-path';

const segment = fc.stringMatching(/^[A-Za-z0-9._~%!$&'()*+,;=:@-]{0,12}$/);
const pathAfter = fc.array(segment, { maxLength: 4 }).map((segments) => segments.map((s) => `/${s}`).join(''));
const query = fc.stringMatching(/^[A-Za-z0-9=&%+._-]{0,20}$/);

describe('portTarget', () => {
  test('a port from 1 to 65535 and what follows it, path and query exactly as sent', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 65535 }), pathAfter, query, (port, after, q) => {
        expect(portTarget(`/port/${port}${after}`, q)).toEqual({ port, path: (after || '/') + (q ? `?${q}` : '') });
      }),
    );
  });

  test('anything but a decimal 1-65535 is a 400 naming the port, never a coerced number', () => {
    const bad = fc.oneof(
      fc.constantFrom('', '0', '00', '65536', '70000', '99999', '123456', '-1', '+80', '8e3', '0x50', ' 80', '80 ', '%38%30', '８０'),
      fc.integer({ min: 65536, max: 10 ** 9 }).map(String),
      fc.string({ maxLength: 8 }).filter((text) => !/^[0-9]{1,5}$/.test(text) && !text.includes('/')),
    );
    fc.assert(
      fc.property(bad, pathAfter, (text, after) => {
        if (/^[0-9]{1,5}$/.test(text) && Number(text) >= 1 && Number(text) <= 65535) return;
        let error: unknown;
        try {
          portTarget(`/port/${text}${after}`, '');
        } catch (err) {
          error = err;
        }
        expect(error).toBeInstanceOf(ApiError);
        expect(error).toMatchObject({ statusCode: 400, code: 'bad_request', message: expect.stringMatching(/^port must be an integer from 1 to 65535, got '/) });
      }),
    );
  });

  test('"/port" without a port is a 400; other paths are not port paths', () => {
    expect(() => portTarget('/port', '')).toThrow(/^port must be an integer/);
    for (const rest of ['/', '/process', '/portal/8000', '/ports/8000', '/filesystem/port/8000', '/Port/8000']) expect(portTarget(rest, '')).toBeUndefined();
  });
});
