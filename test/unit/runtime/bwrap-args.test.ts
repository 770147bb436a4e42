import { bwrapArguments, rootMountPoints, volumeMountError, type LaunchPlan } from '../../../runtime/bwrap-args';

const plan: LaunchPlan = {
  sandboxId: 'sb-1',
  uid: 1000,
  gid: 1000,
  image: { name: 'base', etcDir: '/data/images/base/etc-1', mounts: [{ kind: 'ro-bind', path: '/usr' }, { kind: 'symlink', path: '/bin', target: 'usr/bin' }] },
  etcFiles: [{ name: 'hosts', hostPath: '/data/sb-1/etc/hosts' }],
  agentConfigHostPath: '/data/sb-1/etc/agent.json',
  writable: [
    { hostPath: '/data/sb-1/fs/home', sandboxPath: '/home/user', shared: false },
    { hostPath: '/data/sb-1/fs/var-tmp', sandboxPath: '/var/tmp', shared: true },
  ],
  runDir: '/data/sb-1/run',
  apiDir: '/data/sb-1/api',
  platformDir: '/data/sb-1/platform',
  codeDir: '/data/sb-1/code',
  volumes: [{ hostPath: '/vols/v1', mountPath: '/mnt/data/v1', readOnly: true }],
  agent: { nodeBinary: '/usr/bin/node', agentDir: '/repo/dist/sandbox-agent', nodeModulesDir: '/repo/node_modules', nodeFlags: [] },
  agentEnv: { PATH: '/usr/bin', HANGAR_AGENT_CONFIG: '/etc/hangar/agent.json' },
  seccompFd: 3,
};

const args = bwrapArguments(plan);
const indexOfPair = (flag: string, value: string) => args.findIndex((a, i) => a === flag && args[i + 1] === value);

test('new namespaces, a fresh environment, no capabilities left for the user, and no --die-with-parent', () => {
  for (const flag of ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net', '--new-session', '--clearenv']) expect(args).toContain(flag);
  expect(args).not.toContain('--die-with-parent');
  expect(args).not.toContain('--share-net');
  expect(indexOfPair('--hostname', 'sb-1')).toBeGreaterThan(-1);
  expect(indexOfPair('--cap-drop', 'ALL')).toBeGreaterThan(-1);
  // The filter binds setpriv and everything after it: it must come before the command.
  expect(indexOfPair('--seccomp', '3')).toBeGreaterThan(-1);
  expect(indexOfPair('--seccomp', '3')).toBeLessThan(args.indexOf('--'));
  const command = args.slice(args.indexOf('--') + 1);
  expect(command.slice(0, 5)).toEqual(['/usr/bin/setpriv', '--reuid', '1000', '--regid', '1000']);
  expect(command).toEqual(expect.arrayContaining(['--bounding-set', '-all', '--clear-groups']));
  expect(command.slice(-2)).toEqual(['/opt/hangar/bin/node', '/opt/hangar/agent/main.js']);
});

test('the image read-only, writable folders and volumes bound, missing parents created traversable', () => {
  expect(indexOfPair('--ro-bind', '/usr')).toBeGreaterThan(-1);
  expect(indexOfPair('--symlink', 'usr/bin')).toBeGreaterThan(-1);
  expect(indexOfPair('--ro-bind', '/data/images/base/etc-1')).toBeGreaterThan(-1);
  expect(indexOfPair('--bind', '/data/sb-1/fs/home')).toBeGreaterThan(-1);
  expect(indexOfPair('--ro-bind', '/vols/v1')).toBeGreaterThan(-1);
  expect(args[indexOfPair('--bind', '/data/sb-1/platform') + 2]).toBe('/run/hangar-platform');
  for (const parent of ['/home', '/var', '/mnt', '/mnt/data', '/opt', '/opt/hangar', '/run']) {
    const at = indexOfPair('--dir', parent);
    expect(at).toBeGreaterThan(-1);
    expect(args.slice(at - 2, at)).toEqual(['--perms', '0755']);
  }
  // Parents come before what is mounted inside them.
  expect(indexOfPair('--dir', '/mnt/data')).toBeLessThan(indexOfPair('--ro-bind', '/vols/v1'));
  // The sandbox's code folder read-only at /app, before volumes (one mounted at /app goes over it).
  expect(args.slice(indexOfPair('--ro-bind', '/data/sb-1/code'), indexOfPair('--ro-bind', '/data/sb-1/code') + 3)).toEqual(['--ro-bind', '/data/sb-1/code', '/app']);
  expect(indexOfPair('--ro-bind', '/data/sb-1/code')).toBeLessThan(indexOfPair('--ro-bind', '/vols/v1'));
  // Per-sandbox /etc files go over the image's /etc, after it.
  expect(indexOfPair('--ro-bind', '/data/sb-1/etc/hosts')).toBeGreaterThan(indexOfPair('--ro-bind', '/data/images/base/etc-1'));
});

test('only the agent environment is set', () => {
  const setenv = args.flatMap((a, i) => (a === '--setenv' ? [args[i + 1]] : []));
  expect(setenv.sort()).toEqual(['HANGAR_AGENT_CONFIG', 'PATH']);
});

test.each([
  ['/data', undefined],
  ['/workspace/models', undefined],
  ['relative/path', /absolute/],
  ['/data/../etc', /must not contain/],
  ['/data//x', /normalized/],
  ['/data/', /normalized/],
  ['/', /normalized/],
  ['/etc/app', /reserved path \/etc/],
  ['/proc', /reserved/],
  ['/run', /reserved path \/run\/hangar/],
  ['/opt/hangar/x', /reserved/],
  ['/run/hangar-platform', /reserved/],
  ['/usr/local/data', /reserved/],
])('volume mount path %j', (mountPath, problem) => {
  const error = volumeMountError(mountPath);
  if (problem === undefined) expect(error).toBeUndefined();
  else expect(error).toMatch(problem);
});

test("on a pulled image, the image's files are bound from its rootfs and the agent starts through the host's loader", () => {
  const pulled = bwrapArguments({
    ...plan,
    image: {
      name: '127.0.0.1:5000/box:1',
      etcDir: '/data/images/oci/unpacked/ab/etc-1',
      mounts: [{ kind: 'ro-bind', path: '/bin', source: '/data/images/oci/unpacked/ab/rootfs/bin' }],
      hostLoader: { dir: '/data/images/host-lib-1', loader: 'ld-linux-x86-64.so.2' },
      run: { env: [['FOO', 'bar']] },
    },
  });
  const at = (flag: string, from: string, to: string) => pulled.findIndex((a, i) => a === flag && pulled[i + 1] === from && pulled[i + 2] === to);
  expect(at('--ro-bind', '/data/images/oci/unpacked/ab/rootfs/bin', '/bin')).toBeGreaterThan(-1);
  expect(at('--ro-bind', '/data/images/host-lib-1', '/opt/hangar/lib')).toBeGreaterThan(-1);
  const command = pulled.slice(pulled.indexOf('--') + 1);
  const loader = ['/opt/hangar/lib/ld-linux-x86-64.so.2', '--library-path', '/opt/hangar/lib'];
  expect(command.slice(0, 4)).toEqual([...loader, '/opt/hangar/lib/setpriv']);
  const node = command.slice(command.indexOf('--') + 1);
  expect(node).toEqual([...loader, '--argv0', '/opt/hangar/bin/node', '/opt/hangar/bin/node', '/opt/hangar/agent/main.js']);
  // Nothing of the loader goes into the environment, which the user's processes inherit.
  expect(pulled.join(' ')).not.toMatch(/LD_LIBRARY_PATH|LD_PRELOAD/);
});

test("on a stored image's root overlay, the overlay is bound as / before anything else and none of the image's entries is bound", () => {
  const overlay: LaunchPlan = {
    ...plan,
    rootOverlay: '/data/sb-1/root',
    image: { name: 'app:1', etcDir: '/data/images/oci/unpacked/ab/etc-1', mounts: [], lowerDir: '/data/images/oci/unpacked/ab/rootfs', hostLoader: { dir: '/data/images/host-lib-1', loader: 'ld-linux-x86-64.so.2' } },
  };
  const args = bwrapArguments(overlay);
  const firstMount = args.findIndex((a) => ['--bind', '--ro-bind', '--dir', '--proc', '--dev', '--tmpfs', '--symlink'].includes(a));
  expect(args.slice(firstMount, firstMount + 3)).toEqual(['--bind', '/data/sb-1/root', '/']);
  expect(args.filter((a) => a.includes('/rootfs'))).toEqual([]);
  // The mount points the node makes in the upper layer: those not inside another mount (/dev/shm, /etc's files, a volume in /workspace).
  const points = rootMountPoints({ ...overlay, volumes: [...overlay.volumes, { hostPath: '/vols/v2', mountPath: '/home/user/v2', readOnly: false }] });
  expect(points.map((m) => m.dest)).toEqual(['/proc', '/dev', '/etc', '/home/user', '/var/tmp', '/run/hangar', '/run/hangar-api', '/run/hangar-platform', '/opt/hangar/agent', '/opt/hangar/node_modules', '/opt/hangar/bin/node', '/opt/hangar/lib', '/app', '/mnt/data/v1']);
  expect(points.find((m) => m.dest === '/opt/hangar/bin/node')?.source).toBe('/usr/bin/node');
});
