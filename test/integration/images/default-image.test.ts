import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { stopRuntimeTest, startSandboxPlatform, type SandboxPlatform } from '../../helpers/runtime-platform';
import { callSandbox, exec } from '../../helpers/sandbox-runtime';

// base-image is the default image: a sandbox naming none runs on it (the suite's data folder has
// it, built by the global set-up), its spec records it, and it has what users and the platform
// use inside a sandbox. Sandboxes naming `base` keep the host's folders.
jest.setTimeout(240_000);

let t: TestApp;
let tenant: TestTenant;
let platform: SandboxPlatform;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('default-image') });
  tenant = await createTenant(t.app.pg, 'defimg');
  platform = await startSandboxPlatform(t);
});

afterAll(async () => {
  await stopRuntimeTest({ ...platform, t });
});

const resources = () => tenantResources(t, tenant);
const api: ReturnType<typeof tenantResources>['api'] = (...args) => resources().api(...args);
const socketOf = async (name: string) => platform.runtime.socketPath(await resources().idOf('sandboxes', name));
const run = async (name: string, command: string) => {
  const result = await exec(await socketOf(name), command);
  return { code: result.exitCode, out: result.stdout.trim(), err: result.stderr.trim() };
};

describe('a sandbox naming no image', () => {
  beforeAll(async () => {
    expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'plain' }, spec: { runtime: { memory: 512 } } })).statusCode).toBe(200);
    await resources().status('sandboxes', 'plain', 'DEPLOYED', 120_000);
  });

  test("runs on base-image, and its stored spec says so; an update naming no image keeps it", async () => {
    expect((await api('GET', '/v0/sandboxes/plain')).json().spec.runtime).toEqual({ memory: 512, image: 'base-image' });
    const debian = await run('plain', 'cat /etc/debian_version; test -e /usr/bin/skopeo; echo $?');
    // Debian's tree: not the host's, which has the platform's own tools (skopeo).
    expect(debian.out).toMatch(/^\d+\.\d+\n1$/);
    const updated = await api('PUT', '/v0/sandboxes/plain', { metadata: { name: 'plain', labels: { a: 'b' } }, spec: { runtime: { memory: 512 } } });
    expect(updated.statusCode).toBe(200);
    expect(updated.json().spec.runtime.image).toBe('base-image');
  });

  test("has git, ripgrep, procps, pip and venv, Debian 12's Node 18 and Python 3.11", async () => {
    const git = await run('plain', 'cd /workspace && git init -q repo && cd repo && echo hi > a.txt && git add a.txt && git -c user.name=u -c user.email=u@x commit -qm first && git log --format=%s');
    expect(git).toMatchObject({ code: 0, out: 'first' });
    expect(await run('plain', 'printf "x\\nneedle two\\n" > /tmp/r.txt && rg -n needle /tmp/r.txt')).toMatchObject({ code: 0, out: '2:needle two' });
    const ps = await run('plain', 'ps -e -o comm=');
    expect(ps.code).toBe(0);
    expect(ps.out.split('\n')).toContain('ps');
    expect((await run('plain', 'pip --version')).out).toMatch(/^pip \d+.* \(python 3\.11\)$/);
    const venv = await run('plain', 'python3 -m venv /tmp/venv && /tmp/venv/bin/python -c "import sys; print(sys.prefix)" && /tmp/venv/bin/pip --version');
    expect(venv.code).toBe(0);
    expect(venv.out).toMatch(/^\/tmp\/venv\npip \d+/);
    expect((await run('plain', 'node --version')).out).toMatch(/^v18\./);
    expect((await run('plain', 'python3 --version')).out).toMatch(/^Python 3\.11\./);
  });

  test("the sandbox API's content search runs with the image's ripgrep", async () => {
    expect((await run('plain', 'command -v rg')).out).toBe('/usr/bin/rg');
    const socket = await socketOf('plain');
    expect((await callSandbox(socket, 'PUT', '/filesystem/workspace/notes.txt', { content: 'one\nthe needle here\n' })).status).toBe(200);
    const found = await callSandbox(socket, 'GET', '/filesystem-content-search/workspace?query=needle');
    expect(found.status).toBe(200);
    expect(JSON.stringify(found.json)).toContain('notes.txt');
  });
});

test("a sandbox naming 'base' still runs on the host's folders", async () => {
  expect((await api('POST', '/v0/sandboxes', { metadata: { name: 'host' }, spec: { runtime: { image: 'base', memory: 256 } } })).statusCode).toBe(200);
  const deployed = await resources().status('sandboxes', 'host', 'DEPLOYED', 60_000);
  expect(deployed.spec.runtime.image).toBe('base');
  expect((await run('host', 'test -e /usr/bin/skopeo; echo $?')).out).toBe('0');
});

test('an agent naming no image records base-image; one naming base keeps it', async () => {
  expect((await api('POST', '/v0/agents', { metadata: { name: 'on-default' }, spec: { runtime: { memory: 256 } } })).json().spec.runtime).toEqual({ memory: 256, image: 'base-image' });
  expect((await api('POST', '/v0/agents', { metadata: { name: 'on-host' }, spec: { runtime: { image: 'base' } } })).json().spec.runtime).toEqual({ image: 'base' });
  // An update naming no image keeps the image recorded.
  const updated = await api('PUT', '/v0/agents/on-host', { metadata: { name: 'on-host' }, spec: { runtime: { memory: 300 } } });
  expect(updated.json().spec.runtime).toEqual({ memory: 300, image: 'base' });
  expect((await api('POST', '/v0/jobs', { metadata: { name: 'a-job' }, spec: {} })).json().spec.runtime).toEqual({ image: 'base-image' });
});
