import fc from 'fast-check';
import { requestedSize, storageGrownEvent, storageReadyEvent } from '../../../../domain/volume/lifecycle';

// The volume lifecycle workflow's decisions.

test('volumes only grow: resizes in any order leave the largest size asked for', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 1_048_576 }), fc.array(fc.integer({ min: 1, max: 1_048_576 })), (initial, asked) => {
      expect(asked.reduce(requestedSize, initial)).toBe(Math.max(initial, ...asked));
    }),
  );
});

test('storage events say whether the size is enforced and whether the file system followed', () => {
  expect(storageReadyEvent({ kind: 'loop' }, 64)).toEqual({ type: 'Normal', message: 'storage ready: an ext4 image of 64 MB' });
  expect(storageReadyEvent({ kind: 'folder', reason: 'no loop devices' }, 64)).toEqual({
    type: 'Warning',
    message: 'storage ready as a plain folder, size not enforced: no loop devices',
  });
  expect(storageGrownEvent(128, undefined)).toEqual({ type: 'Normal', message: 'grown to 128 MB' });
  expect(storageGrownEvent(128, 'busy')).toEqual({
    type: 'Warning',
    message: 'grown to 128 MB; the file system follows when next mounted (online resize refused: busy)',
  });
});
