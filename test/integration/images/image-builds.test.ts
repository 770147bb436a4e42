import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { buildContext } from '../../helpers/build-context';
import { buildTestImage, pushTestImage, startRegistry, type TestRegistry } from '../../helpers/oci-registry';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { stopRuntimeTest, startSandboxPlatform, type SandboxPlatform } from '../../helpers/runtime-platform';
import { exec } from '../../helpers/sandbox-runtime';
import { eventually } from '../../helpers/workers';
import { WorkspaceImageStore } from '../../../store/workspace-images';

// Images a workspace builds from a Dockerfile (PUT /v0/images/{name}/build), run by sandboxes as
// `name:tag`. The builds' base comes from a registry of the test's own on loopback (static busybox):
// RUN steps have no network, and nothing here needs the internet.
jest.setTimeout(180_000);

const CONTEXT_LIMIT = 2 * 1024 * 1024;
let t: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let platform: SandboxPlatform;
let registry: TestRegistry;
let scratch: string;
let base: string;
const image = unique('app');
// buildah's step cache outlives runs (the node's data folder): a value of this run's own makes the first build's steps new.
const runId = unique('run');

beforeAll(async () => {
  process.env.HANGAR_BUILD_CONTEXT_LIMIT_BYTES = String(CONTEXT_LIMIT);
  t = await startTestApp({ taskQueue: unique('images') });
  tenant = await createTenant(t.app.pg, 'images');
  other = await createTenant(t.app.pg, 'images-other');
  platform = await startSandboxPlatform(t);
  scratch = path.join(t.config.dataDir, unique('images-scratch'));
  registry = await startRegistry(path.join(scratch, 'registry'));
  buildTestImage(path.join(scratch, 'layout'), 'box', { files: { '/etc/motd': 'from the base\n' }, env: ['PATH=/bin', 'FROM_BASE=yes'] });
  base = `${registry.address}/${unique('test/box')}:1`;
  pushTestImage(path.join(scratch, 'layout'), 'box', base);
}, 120_000);

afterAll(async () => {
  delete process.env.HANGAR_BUILD_CONTEXT_LIMIT_BYTES;
  await registry?.close();
  await stopRuntimeTest({ ...platform, t, scratch });
}, 60_000);

const resources = () => tenantResources(t, tenant);
const api: ReturnType<typeof tenantResources>['api'] = (...args) => resources().api(...args);
const upload = (name: string, context: Buffer, tag = '1', who = tenant) =>
  t.call(who.admin.apiKey, { method: 'PUT', url: `/v0/images/${name}/build?tag=${tag}`, payload: context, workspace: who.workspace, headers: { 'content-type': 'application/gzip' } });

/** The tag once its build has ended (READY or FAILED). */
const built = (name: string, tag = '1') =>
  eventually(`image ${name}:${tag} built`, async () => {
    const body = (await api('GET', `/v0/images/${name}/tags/${tag}`)).json();
    return body.state === 'READY' || body.state === 'FAILED' ? body : undefined;
  }, 150_000);

const dockerfile = (greeting: string) =>
  [
    `FROM ${base}`,
    'ARG WHO=builder',
    `ENV RUN_ID=${runId} GREETING="${greeting}"`,
    'LABEL team=hangar',
    'WORKDIR /work',
    'COPY hello.txt /work/hello.txt',
    'RUN head -c 4000000 /dev/urandom > /work/big.bin && echo "$WHO" > /work/who.txt && chown 1000 /work',
    'USER 1000',
    'RUN id -u > /work/uid.txt',
    'EXPOSE 8080',
    'CMD ["/bin/sh"]',
  ].join('\n');

const stepMessages = (body: { events: { message: string }[] }) => body.events.map((e) => e.message).filter((m) => m.startsWith('step '));

test('a build with ENV, WORKDIR, USER, COPY and RUN: READY with its digest and size; a sandbox on name:tag sees it all', async () => {
  const accepted = await upload(image, buildContext({ Dockerfile: dockerfile('hello'), 'hello.txt': 'copied in\n' }));
  expect(accepted.statusCode).toBe(202);
  expect(accepted.json()).toMatchObject({ name: '1', reference: `${image}:1`, state: 'BUILDING' });
  const tag = await built(image);
  expect(tag).toMatchObject({ state: 'READY', reason: null, progress: { step: 11, steps: 11 } });
  expect(tag.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
  expect(tag.sizeBytes).toBeGreaterThan(4_000_000);
  expect(stepMessages(tag)).toEqual(expect.arrayContaining([expect.stringMatching(/^step 6\/11: COPY hello.txt \/work\/hello.txt$/)]));

  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'on-built' }, spec: { runtime: { image: `${image}:1`, memory: 128 } } })).statusCode).toBe(200);
  await resources().status('sandboxes', 'on-built', 'DEPLOYED', 90_000);
  const socketPath = platform.runtime.socketPath(await resources().idOf('sandboxes', 'on-built'));
  const seen = await exec(socketPath, 'pwd; cat hello.txt who.txt uid.txt /etc/motd; echo "$GREETING $FROM_BASE"');
  expect(seen.stdout).toBe('/work\ncopied in\nbuilder\n1000\nfrom the base\nhello yes\n');
});

test('a rebuild with nothing changed takes every step from the cache and gives the same digest; a change rebuilds from the first changed step', async () => {
  const first = await built(image);
  expect((await upload(image, buildContext({ Dockerfile: dockerfile('hello'), 'hello.txt': 'copied in\n' }))).statusCode).toBe(202);
  const again = await built(image);
  expect(again.state).toBe('READY');
  expect(again.digest).toBe(first.digest);
  const rebuilt = stepMessages(again).slice(-10);
  expect(rebuilt.every((message: string) => message.endsWith('(cached)'))).toBe(true);

  expect((await upload(image, buildContext({ Dockerfile: dockerfile('hello'), 'hello.txt': 'changed\n' }))).statusCode).toBe(202);
  const changed = await built(image);
  expect(changed.state).toBe('READY');
  expect(changed.digest).not.toBe(first.digest);
  const steps = stepMessages(changed).slice(-10);
  // Steps 2-5 (ARG, ENV, LABEL, WORKDIR) come from the cache; COPY, whose file changed, and every step after it run.
  expect(steps.slice(0, 4).every((message: string) => message.endsWith('(cached)'))).toBe(true);
  expect(steps.slice(4).some((message: string) => message.endsWith('(cached)'))).toBe(false);
});

test('an image of the workspace is the base of another build (a multi-stage one); another workspace sees neither', async () => {
  const derived = unique('derived');
  const multiStage = `FROM ${image}:1 AS first\nRUN cat /work/hello.txt /work/who.txt > /work/again.txt\nFROM ${base}\nCOPY --from=first /work/again.txt /again.txt\n`;
  expect((await upload(derived, buildContext({ Dockerfile: multiStage }))).statusCode).toBe(202);
  expect((await built(derived)).state).toBe('READY');
  const stored = await platform.runtime.findWorkspaceImage(tenant.workspaceId, derived, '1');
  expect(fs.readFileSync(path.join(stored!.rootfs, 'again.txt'), 'utf8')).toBe('changed\nbuilder\n');
  expect(fs.existsSync(path.join(stored!.rootfs, 'work'))).toBe(false);
  const theirs = await upload(derived, buildContext({ Dockerfile: `FROM ${image}:1\nRUN true\n` }), '1', other);
  expect(theirs.statusCode).toBe(400);
  expect(theirs.json().message).toBe(`body: Dockerfile line 1: FROM '${image}:1': the workspace has no built image of that name and tag`);
  expect((await t.call(other.admin.apiKey, { method: 'GET', url: `/v0/images/${image}`, workspace: other.workspace })).statusCode).toBe(404);
  const sandbox = await t.call(other.admin.apiKey, { method: 'POST', url: '/v0/sandboxes', payload: { metadata: { name: 'theirs' }, spec: { runtime: { image: `${image}:1` } } }, workspace: other.workspace });
  expect(sandbox.statusCode).toBe(400);
  expect(sandbox.json().message).toMatch(new RegExp(`^body.spec.runtime.image: image '${image}:1' does not exist`));
});

test('a RUN step that fails: the image is FAILED with the reason, and keeps the digest it had', async () => {
  const before = await built(image);
  expect((await upload(image, buildContext({ Dockerfile: `FROM ${base}\nRUN echo broken; exit 3\n` }))).statusCode).toBe(202);
  const failed = await built(image);
  expect(failed.state).toBe('FAILED');
  expect(failed.reason).toMatch(/exit status 3/);
  expect(failed.digest).toBe(before.digest);
  expect(failed.events.at(-1)).toMatchObject({ type: 'Warning', message: expect.stringMatching(/^build failed: /) });
});

test('RUN steps have no network: the registry the node reaches is out of their reach', async () => {
  expect((await fetch(`http://${registry.address}/v2/`)).status).toBe(200);
  const name = unique('offline');
  // The step succeeds only if nc ran and was told the network is unreachable (a loopback of its own, down), and lo is its only interface.
  const [host, port] = registry.address.split(':');
  const run = `RUN nc -w 3 ${host} ${port} < /dev/null > /nc.txt 2>&1; cat /nc.txt; grep -q 'Network is unreachable' /nc.txt && test "$(tail -n +3 /proc/net/dev | wc -l)" = 1`;
  expect((await upload(name, buildContext({ Dockerfile: `FROM ${base}\n${run}\n` }))).statusCode).toBe(202);
  const tag = await built(name);
  expect([tag.state, tag.reason]).toEqual(['READY', null]);
});

test('an upload while the tag builds is a 409, and of uploads at once one builds; a tag left BUILDING without its workflow (the API died between the two) is built by the next upload', async () => {
  const name = unique('busy');
  const context = buildContext({ Dockerfile: `FROM ${base}\nENV RUN_ID=${runId}\nRUN sleep 1\n` });
  expect((await upload(name, context)).statusCode).toBe(202);
  const busy = await upload(name, context);
  expect([busy.statusCode, busy.json().message]).toEqual([409, `image '${name}:1' is being built; wait for its build to end`]);
  expect((await built(name)).state).toBe('READY');

  // Uploads of one new tag at once: the database lets exactly one start a build.
  const raced = unique('raced');
  const replies = await Promise.all(Array.from({ length: 6 }, () => upload(raced, context)));
  expect(replies.map((reply) => reply.statusCode).sort()).toEqual([202, 409, 409, 409, 409, 409]);
  const racedTag = await built(raced);
  expect([racedTag.state, racedTag.events.filter((event: { message: string }) => event.message.startsWith('build context received')).length]).toEqual(['READY', 1]);

  const orphan = unique('orphan');
  const row = await new WorkspaceImageStore(t.app.pg).startBuild({ workspaceId: tenant.workspaceId, name: orphan, tag: '1', contextSha256: '0'.repeat(64), nodeQueue: 'nowhere', actor: 'test' });
  expect(row?.state).toBe('BUILDING');
  // A fresh one may be an upload between its record and its workflow: left alone.
  expect((await upload(orphan, context)).statusCode).toBe(409);
  await t.app.pg.query("UPDATE workspace_images SET updated_at = now() - interval '2 minutes' WHERE id = $1", [row!.id]);
  expect((await upload(orphan, context)).statusCode).toBe(202);
  const tag = await built(orphan);
  expect(tag.state).toBe('READY');
  expect(tag.events.map((event: { message: string }) => event.message)).toContain('build failed: the build was interrupted before it started');
});

test('bad contexts and Dockerfiles are 4xx naming the problem, and leave nothing stored', async () => {
  const contexts = path.join(t.config.dataDir, 'images', 'contexts');
  const stored = () => fs.readdirSync(contexts).sort();
  const before = stored();
  const name = unique('bad');
  const cases: [Buffer, number, string][] = [
    [buildContext({ Dockerfile: `FROM ${base}\nRUN true\nHEALTHCHECK CMD true\n` }), 400, 'body: Dockerfile line 3: the instruction HEALTHCHECK is not supported; supported: FROM, RUN, COPY, ADD, ENV, WORKDIR, USER, ARG, LABEL, EXPOSE, ENTRYPOINT, CMD'],
    [buildContext({ Dockerfile: `FROM ${base}\n`, '../outside.txt': 'x' }), 400, "body: bad build context: entry '../outside.txt' has a '..' segment"],
    [buildContext({ Dockerfile: `FROM ${base}\n`, '/etc/passwd': 'x' }), 400, "body: bad build context: entry '/etc/passwd' has an absolute path"],
    [buildContext({ Dockerfile: `FROM ${base}\n`, 'secrets': { symlink: '../../etc/shadow' } }), 400, "body: bad build context: entry 'secrets' is a link to '../../etc/shadow', outside the build context"],
    [buildContext({ 'src/app.js': 'x' }), 400, 'body: the build context has no Dockerfile at its root'],
    [buildContext({ Dockerfile: `FROM ${base}\n`, 'big.bin': randomBytes(CONTEXT_LIMIT + 1000) }), 413, `body: the build context is larger than the limit of ${CONTEXT_LIMIT} bytes`],
    [Buffer.from('not an archive'), 400, 'body: the build context is not a readable tar.gz archive'],
  ];
  for (const [context, status, message] of cases) {
    const reply = await upload(name, context);
    expect([reply.statusCode, reply.json().message.slice(0, message.length)]).toEqual([status, message]);
  }
  expect((await upload('Bad_Name', buildContext({ Dockerfile: `FROM ${base}\n` }))).json().message).toMatch(/^params.name: 'Bad_Name' must be lowercase/);
  expect((await upload(name, buildContext({ Dockerfile: `FROM ${base}\n` }), '.bad')).json().message).toMatch(/^querystring.tag: the tag '.bad'/);
  expect(stored()).toEqual(before);
  expect((await api('GET', `/v0/images/${name}`)).statusCode).toBe(404);
});

test('two sandboxes on one image share its storage: the second adds nothing of the image on disk', async () => {
  const du = () => Number(execFileSync('du', ['-sbx', path.join(t.config.dataDir, 'images', 'oci')], { encoding: 'utf8' }).split('\t')[0]);
  const tag = await built(image, '1');
  const before = du();
  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'on-built-2' }, spec: { runtime: { image: `${image}:1`, memory: 128 } } })).statusCode).toBe(200);
  await resources().status('sandboxes', 'on-built-2', 'DEPLOYED', 90_000);
  const socketPath = platform.runtime.socketPath(await resources().idOf('sandboxes', 'on-built-2'));
  expect((await exec(socketPath, 'wc -c < /work/big.bin')).stdout.trim()).toBe('4000000');
  // The image holds more than 4 MB (its random file, twice: blob and rootfs); the second sandbox adds under 100 KB to the store.
  expect(tag.sizeBytes).toBeGreaterThan(8_000_000);
  expect(du() - before).toBeLessThan(100_000);
  // Each sandbox's image storage counts the image it runs on (stored once, billed to each) plus its own writes.
  expect(await platform.runtime.imageStorageBytes(await resources().idOf('sandboxes', 'on-built-2'), `${image}:1`)).toBeGreaterThanOrEqual(tag.sizeBytes);
});

test('the list shows the built-in images read-only and the workspace\'s own with their tags; an image in use cannot be deleted', async () => {
  const list = (await api('GET', '/v0/images')).json();
  expect(list[0]).toMatchObject({ metadata: { name: 'base', builtIn: true }, spec: { tags: [{ name: 'latest', state: 'READY' }] } });
  expect(list.find((entry: { metadata: { name: string } }) => entry.metadata.name === image)).toMatchObject({ metadata: { builtIn: false }, spec: { tags: [{ name: '1', reference: `${image}:1` }] } });
  expect((await api('DELETE', '/v0/images/base')).statusCode).toBe(409);

  const inUse = await api('DELETE', `/v0/images/${image}/tags/1`);
  expect(inUse.statusCode).toBe(409);
  expect(inUse.json().message).toBe(`image '${image}:1' is used by sandboxes/on-built, sandboxes/on-built-2; delete or move them to another image first`);
  for (const name of ['on-built', 'on-built-2']) {
    expect((await api('DELETE', `/v0/sandboxes/${name}`)).statusCode).toBe(200);
    await resources().gone('sandboxes', name, 60_000);
  }
  expect((await api('DELETE', `/v0/images/${image}`)).statusCode).toBe(200);
  expect((await api('GET', `/v0/images/${image}`)).statusCode).toBe(404);
  await eventually('the tag gone from the node', async () => ((await platform.runtime.findWorkspaceImage(tenant.workspaceId, image, '1')) === undefined ? true : undefined), 30_000);
  const refused = await api('POST', '/v0/sandboxes', { metadata: { name: 'after-delete' }, spec: { runtime: { image: `${image}:1` } } });
  expect(refused.statusCode).toBe(400);
});
