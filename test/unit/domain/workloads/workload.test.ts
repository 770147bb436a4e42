import { execFileSync } from 'node:child_process';
import { bundleEntryProblem, bundlePaths } from '../../../../domain/workloads/bundles';
import {
  EXIT_MARKER,
  bundleFilesNamedBy,
  reportedExitCode,
  revisionOfSandboxId,
  revisionSandboxId,
  scalesToZero,
  shellLine,
  supervisedCommandLine,
  workloadCommand,
  workloadEnvironment,
  workloadPort,
  workloadState,
} from '../../../../domain/workloads/workload';

const sh = (line: string) => execFileSync('sh', ['-c', line], { encoding: 'utf8' });

describe('shellLine', () => {
  test('keeps every argument whole, whatever it holds', () => {
    const args = ['printf', '%s|', 'plain', 'two words', "it's", '$HOME', '`id`', '"q"', ''];
    expect(sh(shellLine(args))).toBe("plain|two words|it's|$HOME|`id`|\"q\"||");
  });
});

describe('supervisedCommandLine', () => {
  test('reports the exit code on stderr and hands it back', () => {
    let caught: { status: number; stderr: string } | undefined;
    try {
      execFileSync('sh', ['-c', supervisedCommandLine(['sh', '-c', 'echo out; exit 7'])], { encoding: 'utf8', env: { PATH: process.env.PATH }, stdio: 'pipe' });
    } catch (err) {
      caught = err as { status: number; stderr: string };
    }
    expect(caught?.status).toBe(7);
    expect(caught?.stderr).toContain(`${EXIT_MARKER} 7`);
    expect(reportedExitCode(caught!.stderr)).toBe(7);
  });

  test('reportedExitCode reads the last report, and nothing from output without one', () => {
    expect(reportedExitCode(`${EXIT_MARKER} 1\nrestarted\n${EXIT_MARKER} 137\n`)).toBe(137);
    expect(reportedExitCode('Error: boom\n')).toBeUndefined();
  });
});

describe('bundle entries', () => {
  test.each([
    ['main.js', 'File', undefined],
    ['lib/util/index.js', 'File', undefined],
    ['./lib/', 'Directory', undefined],
    ['a..b/c..js', 'File', undefined],
    ['/etc/passwd', 'File', "entry '/etc/passwd' has an absolute path"],
    ['C:\\x', 'File', "entry 'C:\\x' has an absolute path"],
    ['../escape.js', 'File', "entry '../escape.js' has a '..' segment"],
    ['lib/../../x', 'File', "entry 'lib/../../x' has a '..' segment"],
    ['lib\\..\\x', 'File', "entry 'lib\\..\\x' has a '..' segment"],
    ['link', 'SymbolicLink', "entry 'link' is a SymbolicLink; only files and folders are allowed"],
    ['hard', 'Link', "entry 'hard' is a Link; only files and folders are allowed"],
    ['dev', 'CharacterDevice', "entry 'dev' is a CharacterDevice; only files and folders are allowed"],
  ])('%s (%s)', (entryPath, type, problem) => {
    expect(bundleEntryProblem(entryPath, type)).toBe(problem);
  });

  test('bundle paths are content-addressed and refuse anything but a sha256', () => {
    const sha = 'a'.repeat(64);
    expect(bundlePaths('/data', sha)).toEqual({ root: '/data/bundles', archive: `/data/bundles/${sha}.tar.gz`, unpacked: `/data/bundles/${sha}` });
    expect(() => bundlePaths('/data', '../../etc')).toThrow(/not a sha256/);
  });
});

describe('the runtime contract', () => {
  const key = { workspace: 'ws', kind: 'agents' as const, name: 'echo' };

  test('PORT, HOST and identity win over user variables of the same name', () => {
    const env = workloadEnvironment(key, { runtime: { envs: [{ name: 'PORT', value: '1' }, { name: 'GREETING', value: 'hi' }], ports: [{ target: 9000 }] } }, { NODE_PATH: '/x' });
    expect(env).toEqual({ GREETING: 'hi', NODE_PATH: '/x', PORT: '9000', HOST: '127.0.0.1', HANGAR_WORKSPACE: 'ws', HANGAR_RESOURCE_KIND: 'agents', HANGAR_RESOURCE_NAME: 'echo' });
  });

  test('defaults: port 8000 and `node main.js`', () => {
    expect(workloadPort({})).toBe(8000);
    expect(workloadCommand({ runtime: { command: [] } })).toEqual(['node', 'main.js']);
    expect(workloadCommand({ runtime: { command: ['python3', 'app.py'] } })).toEqual(['python3', 'app.py']);
  });

  test('files the command names are checked; flags, absolute paths and code are not', () => {
    expect(bundleFilesNamedBy(['node', '--enable-source-maps', 'dist/main.js'])).toEqual(['dist/main.js']);
    expect(bundleFilesNamedBy(['python3', 'app.py', '--config', 'x.yaml'])).toEqual(['app.py']);
    expect(bundleFilesNamedBy(['node', '-e', 'console.log(1)', '/usr/lib/x.js'])).toEqual([]);
  });

  test('revision sandbox ids are valid hostnames of at most 63 characters', () => {
    const id = revisionSandboxId('0b7f4c1e-93a2-4c7e-8f00-1234567890ab', 123456);
    expect(id).toMatch(/^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/);
  });

  test('a revision sandbox id names its resource and revision again; other ids name none', () => {
    const resourceId = '0b7f4c1e-93a2-4c7e-8f00-1234567890ab';
    expect(revisionOfSandboxId(revisionSandboxId(resourceId, 12))).toEqual({ resourceId, revision: 12 });
    for (const other of [resourceId, `job-${resourceId}`, 'warm-1', `wl-${resourceId}-r0`, `wl-${resourceId}-r1x`, `wl-x-r1`]) expect(revisionOfSandboxId(other)).toBeUndefined();
  });
});

describe('scale to zero', () => {
  test('only minScale 0 scales to zero; absent or 1 and above is always on', () => {
    expect(scalesToZero({ runtime: { minScale: 0 } })).toBe(true);
    expect(scalesToZero({})).toBe(false);
    expect(scalesToZero({ runtime: { minScale: 1 } })).toBe(false);
    expect(scalesToZero({ runtime: { minScale: 3 } })).toBe(false);
  });

  test('the state a workload shows: RUNNING or SCALED_TO_ZERO while a revision serves, null otherwise', () => {
    const serving = { revision: 1, sandboxId: 'wl-x-r1', socketPath: '/data/workload-sockets/wl-x-r1-8000.sock' };
    expect(workloadState('DEPLOYED', { serving })).toBe('RUNNING');
    expect(workloadState('DEPLOYED', { serving, scale: null })).toBe('RUNNING');
    expect(workloadState('DEPLOYED', { serving, scale: 'SCALED_TO_ZERO' })).toBe('SCALED_TO_ZERO');
    // A new revision deploying while the old one serves still shows the old one's state.
    expect(workloadState('DEPLOYING', { serving, scale: 'RUNNING' })).toBe('RUNNING');
    expect(workloadState('UPLOADING', {})).toBeNull();
    expect(workloadState('DELETING', { serving })).toBeNull();
    // Jobs keep code, not a process.
    expect(workloadState('DEPLOYED', { serving: { codeDir: '/data/bundles/x' } as never })).toBeNull();
  });
});
