import { isBackendUnavailable } from '../../../api/backend-unavailable';

describe('isBackendUnavailable', () => {
  test('socket errors, PostgreSQL shutdowns, lost pg connections and gRPC UNAVAILABLE, also as a cause', () => {
    const socket = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    for (const err of [
      socket,
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      new Error('Connection terminated unexpectedly'),
      new Error('Client has encountered a connection error and is not queryable'),
      Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 }),
      new Error('workflow start failed', { cause: socket }),
    ]) {
      expect({ message: err.message, unavailable: isBackendUnavailable(err) }).toEqual({ message: err.message, unavailable: true });
    }
  });

  test('anything else is not: a constraint violation, a bug, nothing at all', () => {
    for (const err of [Object.assign(new Error('duplicate key'), { code: '23505' }), new TypeError('x is undefined'), undefined, null, 'text']) {
      expect(isBackendUnavailable(err)).toBe(false);
    }
  });
});
