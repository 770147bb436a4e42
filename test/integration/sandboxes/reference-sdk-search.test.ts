import { SandboxInstance } from '@blaxel/core';
import { deployedSandbox, startReferenceSdkPlatform, type ReferenceSdkPlatform } from '../../helpers/reference-sdk';
import { unique } from '../../helpers/platform';
import { eventually } from '../../helpers/workers';

// fs.find, fs.search, fs.grep and fs.watch of the reference SDK (@blaxel/core) against a Hangar
// sandbox, through the harness of test/helpers/reference-sdk.ts (header names and base URLs only).
// Real sandboxes on a busy 2-core machine: generous limits; no test asserts on time.
jest.setTimeout(90_000);

let hangar: ReferenceSdkPlatform;
let sandbox: SandboxInstance;

const name = unique('sdk-search');

beforeAll(async () => {
  hangar = await startReferenceSdkPlatform('sdk-search');
  await SandboxInstance.create({ metadata: { name }, spec: { runtime: { image: 'hangar/base:latest', memory: 256 } } });
  sandbox = await deployedSandbox(name, 60_000);
}, 120_000);

afterAll(() => hangar?.stop(), 60_000);

/** Runs a shell command in the sandbox and waits for it to succeed. */
async function sh(command: string): Promise<void> {
  const done = await sandbox.process.exec({ command, waitForCompletion: true });
  if (done.exitCode !== 0) throw new Error(`${command}: exit ${done.exitCode}: ${done.logs}`);
}

/** A call of the sandbox API without the SDK, as a user's own HTTP client makes it. */
function sandboxCall(method: string, path: string): Promise<Response> {
  return fetch(`${sandbox.metadata.url}${path}`, { method, headers: { authorization: `Bearer ${hangar.tenant.admin.apiKey}` } });
}

/** The sandbox API's answer to a bad request, as the SDK reports it. */
async function refusal(call: Promise<unknown>): Promise<string> {
  const err = await call.then(() => undefined, (e: Error) => e);
  if (!err) throw new Error('the call succeeded');
  return err.message;
}

describe('fs.find', () => {
  beforeAll(() =>
    sh('mkdir -p /tmp/find/src/lib /tmp/find/node_modules/dep /tmp/find/.cache && cd /tmp/find && ' +
      'touch src/a.ts src/b.js src/lib/c.ts src/lib/d.md node_modules/dep/e.ts .cache/f.ts .hidden.ts top.ts'));

  test('files by pattern, below the folder, without the default excluded folders and hidden names', async () => {
    const found = await sandbox.fs.find('/tmp/find', { type: 'file', patterns: ['*.ts'] });
    expect(found).toEqual({ matches: ['src/a.ts', 'src/lib/c.ts', 'top.ts'].map((path) => ({ path, type: 'file' })), total: 3 });
    const both = await sandbox.fs.find('/tmp/find', { patterns: ['*.ts', '*.md'], excludeHidden: false, excludeDirs: ['lib'] });
    expect(both.matches.map((m) => m.path)).toEqual(['.cache/f.ts', '.hidden.ts', 'node_modules/dep/e.ts', 'src/a.ts', 'top.ts']);
  });

  test('directories, and a limit on the results', async () => {
    expect((await sandbox.fs.find('/tmp/find', { type: 'directory' })).matches).toEqual([
      { path: 'src', type: 'directory' },
      { path: 'src/lib', type: 'directory' },
    ]);
    expect(await sandbox.fs.find('/tmp/find', { type: 'file', maxResults: 2 })).toEqual({
      matches: [{ path: 'src/a.ts', type: 'file' }, { path: 'src/b.js', type: 'file' }],
      total: 2,
    });
  });

  test('bad input is a 400 naming what is wrong', async () => {
    expect(await refusal(sandbox.fs.find('/tmp/find', { type: 'socket' as 'file' }))).toMatch(/400.*'type' must be file or directory/);
    expect(await refusal(sandbox.fs.find('/tmp/find', { maxResults: -1 }))).toMatch(/400.*'maxResults'/);
    expect(await refusal(sandbox.fs.find('/tmp/find', { patterns: ['[abc'] }))).toMatch(/400.*'patterns'.*\[abc/);
    expect(await refusal(sandbox.fs.find('/tmp/no-such-folder'))).toMatch(/400.*path '\/tmp\/no-such-folder' is not a directory/);
    expect(await refusal(sandbox.fs.find('/tmp/find/top.ts'))).toMatch(/400.*is not a directory/);
  });
});

describe('fs.search', () => {
  beforeAll(() => sh('mkdir -p /tmp/fz/a/tmp /tmp/fz/x/t/m/p/f && cd /tmp/fz && touch a/tmp/fz.txt x/t/m/p/f/z other.txt'));

  test('ranks paths by how well they match, best first (the SDK sends no query: the path is matched, as the reference does)', async () => {
    const found = await sandbox.fs.search('ignored by the SDK', '/tmp/fz');
    expect(found.matches.map((m) => [m.path, m.type])).toEqual([
      ['a/tmp/fz.txt', 'file'],
      ['x/t/m/p/f/z', 'file'],
    ]);
    expect(found.matches[0].score).toBeGreaterThan(found.matches[1].score);
    expect(found.total).toBe(2);
  });

  test('a caller that sends the query (as the route documents it) gets the paths matching it, best first', async () => {
    const res = await sandboxCall('GET', `/filesystem-search/${encodeURIComponent('/tmp/fz')}?query=fz&maxResults=0`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { matches: { path: string }[] };
    expect(body.matches.map((m) => m.path)).toEqual(['a/tmp/fz.txt', 'x/t/m/p/f/z']);
  });
});

describe('HEAD', () => {
  test('answers whether the folder can be served, with nothing searched', async () => {
    for (const route of ['filesystem-find', 'filesystem-search', 'filesystem-content-search', 'watch/filesystem']) {
      expect([route, (await sandboxCall('HEAD', `/${route}/${encodeURIComponent('/tmp/find')}`)).status]).toEqual([route, 200]);
      expect([route, (await sandboxCall('HEAD', `/${route}/${encodeURIComponent('/tmp/not-there')}`)).status]).toEqual([route, 400]);
    }
  });
});

describe('fs.grep', () => {
  beforeAll(async () => {
    await sandbox.fs.write('/tmp/grep/src/main.ts', 'import x\nconst needle = 1;\n// NEEDLE again\nexport {}\n');
    await sandbox.fs.write('/tmp/grep/src/notes.md', 'a needle in markdown\n');
    await sandbox.fs.write('/tmp/grep/node_modules/dep/index.ts', 'needle\n');
  });

  test('lines holding the text, with line, column and context; case ignored unless asked', async () => {
    // The sandbox's image has ripgrep (the node's, shown read-only): this goes through it.
    await sh('command -v rg');
    const found = await sandbox.fs.grep('needle', '/tmp/grep', { contextLines: 1 });
    expect(found).toEqual({
      query: 'needle',
      total: 3,
      matches: [
        { path: 'src/main.ts', line: 2, column: 7, text: 'const needle = 1;', context: 'import x\nconst needle = 1;\n// NEEDLE again' },
        { path: 'src/main.ts', line: 3, column: 4, text: '// NEEDLE again', context: 'const needle = 1;\n// NEEDLE again\nexport {}' },
        { path: 'src/notes.md', line: 1, column: 3, text: 'a needle in markdown', context: 'a needle in markdown' },
      ],
    });
    const exact = await sandbox.fs.grep('NEEDLE', '/tmp/grep', { caseSensitive: true, filePattern: '*.ts', excludeDirs: [] });
    expect(exact.matches.map((m) => [m.path, m.line, m.column])).toEqual([['src/main.ts', 3, 4]]);
    expect((await sandbox.fs.grep('needle', '/tmp/grep', { maxResults: 1 })).matches.map((m) => m.line)).toEqual([2]);
  });

  test('bad input is a 400 naming what is wrong', async () => {
    expect(await refusal(sandbox.fs.grep('', '/tmp/grep'))).toMatch(/400.*'query' is required/);
    expect(await refusal(sandbox.fs.grep('x', '/tmp/grep', { contextLines: 1000 }))).toMatch(/400.*'contextLines'/);
    expect(await refusal(sandbox.fs.grep('x', '/tmp/grep', { filePattern: 'src/*.ts' }))).toMatch(/400.*'filePattern'/);
    expect(await refusal(sandbox.fs.grep('x', '/tmp/nothing-here'))).toMatch(/400.*not a directory/);
  });
});

interface SeenEvent {
  op: string;
  name: string;
  path: string;
}

/** Watches a folder with the SDK, keeping every event it delivers and any error it reports. */
function watching(path: string, options: { ignore?: string[] } = {}) {
  const events: SeenEvent[] = [];
  const errors: Error[] = [];
  const handle = sandbox.fs.watch(path, (event) => void events.push({ op: event.op, name: event.name, path: event.path }), {
    ...options,
    withContent: false,
    onError: (err) => void errors.push(err),
  });
  return { events, errors, close: () => handle.close() };
}

/**
 * The SDK's watch returns before the stream is open: writes a probe file (again and again) until
 * the watch reports one, so that what the test writes next falls inside the watch.
 */
async function watchInPlace(watch: ReturnType<typeof watching>, folder: string): Promise<void> {
  let probe = 0;
  await eventually(`watch of ${folder} in place`, async () => {
    if (watch.errors.length > 0) throw watch.errors[0];
    if (watch.events.some((e) => e.name.startsWith('probe-'))) return true;
    await sandbox.fs.write(`${folder}/probe-${probe++}`, 'p');
    return undefined;
  });
}

const seen = (watch: ReturnType<typeof watching>, wanted: SeenEvent) =>
  eventually(`${wanted.op} ${wanted.path}/${wanted.name}`, async () =>
    watch.events.some((e) => e.op === wanted.op && e.name === wanted.name && e.path === wanted.path) ? true : undefined,
  );

describe('what the API never shows', () => {
  // /etc/hangar holds the agent's configuration (the user's environment variables among it).
  test('find, search and grep below /etc pass over /etc/hangar; asking for it is a 403', async () => {
    const folders = await sandbox.fs.find('/etc', { type: 'directory', maxResults: 0, excludeHidden: false });
    expect(folders.matches.length).toBeGreaterThan(0);
    expect(folders.matches.filter((m) => m.path.startsWith('hangar'))).toEqual([]);
    expect((await sandbox.fs.grep('agent.sock', '/etc', { maxResults: 0 })).matches).toEqual([]);
    expect((await sandbox.fs.search('x', '/etc')).matches.filter((m) => m.path.startsWith('hangar'))).toEqual([]);
    expect(await refusal(sandbox.fs.find('/etc/hangar'))).toMatch(/403/);
  });
});

describe('fs.watch', () => {
  test('a write, a chmod, a rename and a removal arrive as CREATE, WRITE, CHMOD, RENAME and REMOVE events', async () => {
    await sandbox.fs.mkdir('/tmp/watch');
    const watch = watching('/tmp/watch');
    try {
      await watchInPlace(watch, '/tmp/watch');
      await sandbox.fs.write('/tmp/watch/a.txt', 'hello');
      await seen(watch, { op: 'CREATE', name: 'a.txt', path: '/tmp/watch' });
      await seen(watch, { op: 'WRITE', name: 'a.txt', path: '/tmp/watch' });
      await sh('chmod 600 /tmp/watch/a.txt');
      await seen(watch, { op: 'CHMOD', name: 'a.txt', path: '/tmp/watch' });
      await sh('mv /tmp/watch/a.txt /tmp/watch/b.txt');
      await seen(watch, { op: 'RENAME', name: 'a.txt', path: '/tmp/watch' });
      await seen(watch, { op: 'CREATE', name: 'b.txt', path: '/tmp/watch' });
      await sandbox.fs.rm('/tmp/watch/b.txt');
      await seen(watch, { op: 'REMOVE', name: 'b.txt', path: '/tmp/watch' });
      // The stream's keepalive lines reached the SDK too: it skipped them without an error.
      expect(watch.errors).toEqual([]);
    } finally {
      watch.close();
    }
  });

  test('/** watches the folders below, those made after the watch began too; ignore patterns hold events back', async () => {
    await sandbox.fs.mkdir('/tmp/deep/old');
    const watch = watching('/tmp/deep/**', { ignore: ['skipped'] });
    try {
      await watchInPlace(watch, '/tmp/deep/old');
      await sandbox.fs.write('/tmp/deep/old/skipped.txt', 'not seen');
      await sh('mkdir -p /tmp/deep/new/inner');
      await seen(watch, { op: 'CREATE', name: 'new', path: '/tmp/deep' });
      await eventually('the new folder watched', async () => {
        await sandbox.fs.write('/tmp/deep/new/inner/late.txt', 'x');
        return watch.events.some((e) => e.name === 'late.txt' && e.path === '/tmp/deep/new/inner') ? true : undefined;
      });
      expect(watch.events.filter((e) => e.name.includes('skipped'))).toEqual([]);
      expect(watch.errors).toEqual([]);
    } finally {
      watch.close();
    }
  });

  test('the stream ends when the SDK closes the watch: the sandbox API holds no request for it', async () => {
    const [box] = await hangar.runtime.list();
    const watch = watching('/tmp/watch');
    await watchInPlace(watch, '/tmp/watch');
    expect((await hangar.runtime.activity(box.id)).inflightRequests).toBeGreaterThanOrEqual(1);
    watch.close();
    await eventually('the watch request ended', async () => ((await hangar.runtime.activity(box.id)).inflightRequests === 0 ? true : undefined));
  });

  test('a watch on a missing folder, or on a file, reports the 400 of the sandbox API', async () => {
    const missing = watching('/tmp/not-there');
    await eventually('the error reported', async () => (missing.errors.length > 0 ? true : undefined));
    expect(missing.errors[0].message).toMatch(/path '\/tmp\/not-there' is not a directory/);
    await sandbox.fs.write('/tmp/a-file.txt', 'x');
    const file = watching('/tmp/a-file.txt');
    await eventually('the error reported', async () => (file.errors.length > 0 ? true : undefined));
    expect(file.errors[0].message).toMatch(/is not a directory/);
  });
});
