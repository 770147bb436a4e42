import { parseCgroupMounts, parseProcCgroup } from '../../../runtime/cgroups';
import { imageEtcFiles, sandboxEtcFiles } from '../../../runtime/etc-files';
import { assertSandboxId, sandboxLayout } from '../../../runtime/layout';

test('cgroup mounts: v1 controllers and the v2 hierarchy', () => {
  const mounts = parseCgroupMounts(
    [
      'tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0',
      'cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0',
      'cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,relatime,cpu,cpuacct 0 0',
      'cgroup /sys/fs/cgroup/freezer cgroup rw,relatime,freezer 0 0',
      'cgroup /sys/fs/cgroup/pids cgroup rw,relatime,pids 0 0',
      'cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0',
    ].join('\n'),
  );
  expect(Object.fromEntries(mounts.v1)).toEqual({ memory: '/sys/fs/cgroup/memory', freezer: '/sys/fs/cgroup/freezer', pids: '/sys/fs/cgroup/pids' });
  expect(mounts.v2).toBe('/sys/fs/cgroup/unified');
  expect(parseCgroupMounts('cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0')).toEqual({ v1: new Map(), v2: '/sys/fs/cgroup' });
});

test("a process's groups, per controller", () => {
  const groups = parseProcCgroup('9:name=systemd:/\n6:freezer:/\n4:memory:/process_api/abc\n2:cpu,cpuacct:/x\n0::/user.slice\n');
  expect(groups.get('memory')).toBe('/process_api/abc');
  expect(groups.get('freezer')).toBe('/');
  expect(groups.get('cpuacct')).toBe('/x');
  expect(groups.get('')).toBe('/user.slice');
});

test('sandbox ids are safe as host names, file names and cgroup names', () => {
  for (const id of ['a', '0f8c2c9e-8d1b-4f7e-9c55-2a1b3c4d5e6f', 'sb_1']) expect(() => assertSandboxId(id)).not.toThrow();
  for (const id of ['', '-a', '../x', 'a/b', 'a.b', 'x'.repeat(64), 'a b']) expect(() => assertSandboxId(id)).toThrow(/id must be/);
  expect(sandboxLayout('/data', 'sb1').socketPath).toBe('/data/sandboxes/sb1/api/agent.sock');
});

test("the synthesized /etc names the sandbox user and the sandbox, nothing of the host", () => {
  const etc = imageEtcFiles({ uid: 1234, gid: 1234, home: '/home/user' });
  expect(etc.passwd).toContain('user:x:1234:1234:sandbox user:/home/user:/bin/bash');
  expect(Object.keys(etc).sort()).toEqual(['group', 'nsswitch.conf', 'passwd']);
  expect(sandboxEtcFiles('sb-9').hosts).toMatch(/^127\.0\.0\.1\tlocalhost sb-9$/m);
  // The resolver is the sandbox's own: loopback without a network, the node's DNS answerer with one.
  expect(sandboxEtcFiles('sb-9')['resolv.conf']).toMatch(/^nameserver 127\.0\.0\.1$/m);
  expect(sandboxEtcFiles('sb-9', '10.200.0.1')['resolv.conf']).toMatch(/^nameserver 10\.200\.0\.1$/m);
});
