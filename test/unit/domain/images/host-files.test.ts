import { mergeAccountFile } from '../../../../domain/images/accounts';
import { parseLddOutput } from '../../../../domain/images/ldd';

test("ldd's output: the loader, the libraries as resolved, the missing ones; no vDSO", () => {
  const text = [
    '\tlinux-vdso.so.1 (0x00007f6ff9120000)',
    '\tlibdl.so.2 => /lib/x86_64-linux-gnu/libdl.so.2 (0x00007f6ff910a000)',
    '\tlibstdc++.so.6 => /lib/x86_64-linux-gnu/libstdc++.so.6 (0x00007f6ff8e00000)',
    '\tlibgone.so.1 => not found',
    '\t/lib64/ld-linux-x86-64.so.2 (0x00007f6ff9122000)',
    '',
  ].join('\n');
  expect(parseLddOutput(text)).toEqual({
    interpreter: '/lib64/ld-linux-x86-64.so.2',
    libraries: [
      { name: 'libdl.so.2', path: '/lib/x86_64-linux-gnu/libdl.so.2' },
      { name: 'libstdc++.so.6', path: '/lib/x86_64-linux-gnu/libstdc++.so.6' },
    ],
    missing: ['libgone.so.1'],
  });
  expect(parseLddOutput('\tstatically linked\n')).toEqual({ libraries: [], missing: [] });
});

test("the sandbox's user replaces an image account of the same name or id; the others stay", () => {
  const image = ['root:x:0:0:root:/root:/bin/sh', 'node:x:1000:1000::/home/node:/bin/sh', 'user:x:1001:1001::/home/u:/bin/sh', 'daemon:x:1:1::/:/bin/false', ''].join('\n');
  const own = 'user:x:1000:1000:sandbox user:/home/user:/bin/sh';
  expect(mergeAccountFile(image, own)).toBe(['root:x:0:0:root:/root:/bin/sh', 'daemon:x:1:1::/:/bin/false', own, ''].join('\n'));
  expect(mergeAccountFile(undefined, own)).toBe(`${own}\n`);
  expect(mergeAccountFile('root:x:0:\nuser:x:5:\n', 'user:x:1000:')).toBe('root:x:0:\nuser:x:1000:\n');
});
