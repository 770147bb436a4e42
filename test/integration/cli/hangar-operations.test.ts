import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NodeHeartbeat } from '../../../runtime/node-heartbeat';
import { hangarBinary, runHangar, type HangarRun } from '../../helpers/hangar-cli';
import { buildTestImage, pushTestImage, startRegistry, type TestRegistry } from '../../helpers/oci-registry';
import { addIdentity, unique } from '../../helpers/platform';
import { startReferenceSdkPlatform, type ReferenceSdkPlatform } from '../../helpers/reference-sdk';

/**
 * The built `hangar` binary against the listening platform, for what goes beyond one API call:
 * the operator's node commands, copying files and directories in and out of a sandbox, its shell
 * (piped, and on a terminal that `script` gives it), and deploying a folder with a Dockerfile.
 */
jest.setTimeout(180_000);

let p: ReferenceSdkPlatform;
let home: string;
let env: Record<string, string>;
let registry: TestRegistry;
let scratch: string;
const heartbeats: NodeHeartbeat[] = [];

const hangar = (args: string[], stdin: string | Buffer = '', extraEnv: Record<string, string> = {}) => runHangar(home, args, { ...env, ...extraEnv }, stdin);

beforeAll(async () => {
  if (!fs.existsSync(hangarBinary())) throw new Error('dist/cli/hangar.js is missing: run npm run build first');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-ops-'));
  p = await startReferenceSdkPlatform('cli-ops');
  const apiUrl = `http://127.0.0.1:${(p.t.app.server.address() as { port: number }).port}`;
  env = { HANGAR_URL: apiUrl, HANGAR_API_KEY: p.tenant.admin.apiKey, HANGAR_WORKSPACE: p.tenant.workspace };
  scratch = fs.mkdtempSync(path.join(p.t.config.dataDir, 'cli-ops-'));
  registry = await startRegistry(path.join(scratch, 'registry'));
}, 120_000);

afterAll(async () => {
  await Promise.all(heartbeats.map((heartbeat) => heartbeat.stop()));
  await registry?.close();
  await p?.stop();
  fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(scratch, { recursive: true, force: true });
});

async function sandboxNamed(prefix: string): Promise<string> {
  const name = unique(prefix);
  const created = await p.t.call(p.tenant.admin.apiKey, { method: 'POST', url: '/v0/sandboxes', workspace: p.tenant.workspace, payload: { metadata: { name }, spec: {} } });
  expect(created.statusCode).toBe(200);
  return name;
}

describe('hangar node', () => {
  it('lists, drains and undrains a node through the API; a key without the account admin role is refused (exit 1)', async () => {
    const id = unique('cli-node');
    // A node of another platform's queues: placement here never picks it, so draining it changes nothing else.
    const heartbeat = new NodeHeartbeat({ pg: p.t.app.pg, id, taskQueue: `elsewhere-node-${id}`, region: 'eu-cli', labels: {}, dataDir: p.t.config.dataDir, sandboxes: async () => [] });
    heartbeats.push(heartbeat);
    await heartbeat.start();

    const listed = await hangar(['node', 'list']);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^NODE\s+STATE\s+REGION\s+SANDBOXES\s+MEMORY FREE/);
    expect(listed.stdout).toMatch(new RegExp(`^${id}\\s+READY\\s+eu-cli\\s+0\\s+[0-9.]+ / [0-9.]+ GiB`, 'm'));

    expect(await hangar(['node', 'drain', id])).toMatchObject({ code: 0, stdout: `node '${id}' drained: nothing new is placed on it; what it runs stays\n` });
    expect((await hangar(['node', 'list'])).stdout).toMatch(new RegExp(`^${id}\\s+READY \\(drained\\)\\s+eu-cli`, 'm'));
    const json = await hangar(['node', 'list', '-o', 'json']);
    expect((JSON.parse(json.stdout) as { id: string; drained: boolean }[]).find((node) => node.id === id)).toMatchObject({ drained: true, drainedAt: expect.any(String) });

    const undrained = await hangar(['node', 'undrain', id, '-o', 'json']);
    expect(undrained.code).toBe(0);
    expect(JSON.parse(undrained.stdout)).toMatchObject({ id, drained: false });

    const unknown = await hangar(['node', 'drain', 'no-such-node']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/404 node 'no-such-node' not found/);

    const member = await addIdentity(p.t.app.pg, { accountId: p.tenant.accountId, workspaceId: p.tenant.workspaceId, role: 'admin', name: 'cli-member' });
    for (const args of [['node', 'list'], ['node', 'drain', id]]) {
      const refused = await hangar(args, '', { HANGAR_API_KEY: member.apiKey });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/403 the nodes are for account admins: use an API key of an account admin/);
    }
    expect(JSON.parse((await hangar(['node', 'list', '-o', 'json'])).stdout).find((node: { id: string }) => node.id === id).drained).toBe(false);
  });
});

/** Every file below `dir` (relative path -> bytes and mode), to compare two trees. */
function treeOf(dir: string): Record<string, { bytes: string; mode: number }> {
  const found: Record<string, { bytes: string; mode: number }> = {};
  const walk = (relative: string) => {
    for (const entry of fs.readdirSync(path.join(dir, relative), { withFileTypes: true })) {
      const at = path.join(relative, entry.name);
      if (entry.isDirectory()) walk(at);
      else found[at] = { bytes: fs.readFileSync(path.join(dir, at)).toString('base64'), mode: fs.statSync(path.join(dir, at)).mode & 0o777 };
    }
  };
  walk('');
  return found;
}

describe('hangar sandbox cp', () => {
  it('copies a binary file and a directory into a sandbox and back, byte for byte, modes kept', async () => {
    const box = await sandboxNamed('cli-cp');
    const local = fs.mkdtempSync(path.join(home, 'cp-'));
    // Every byte value, then random bytes past one upload chunk: nothing may be read as text.
    const binary = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(300_000)]);
    fs.writeFileSync(path.join(local, 'blob.bin'), binary);
    const tree = path.join(local, 'project');
    fs.mkdirSync(path.join(tree, 'src', 'deep'), { recursive: true });
    fs.writeFileSync(path.join(tree, 'README'), 'hello\n');
    fs.writeFileSync(path.join(tree, 'src', 'run.sh'), '#!/bin/sh\necho ran\n', { mode: 0o755 });
    fs.writeFileSync(path.join(tree, 'src', 'deep', 'data.bin'), randomBytes(70_000));
    fs.writeFileSync(path.join(tree, 'src', 'deep', 'empty'), '');

    expect(await hangar(['sandbox', 'cp', path.join(local, 'blob.bin'), `${box}:/tmp/`])).toMatchObject({ code: 0, stdout: 'copied 1 file\n' });
    expect(await hangar(['sandbox', 'cp', tree, `${box}:/tmp/project`])).toMatchObject({ code: 0, stdout: 'copied 4 files\n' });
    // What the sandbox sees: the sizes and the mode, and the script runs.
    const seen = await hangar(['sandbox', 'exec', box, '--', 'sh', '-c', 'wc -c < /tmp/blob.bin; stat -c %a /tmp/project/src/run.sh; /tmp/project/src/run.sh']);
    expect(seen).toMatchObject({ code: 0, stdout: `${binary.length}\n755\nran\n` });

    const back = fs.mkdtempSync(path.join(home, 'back-'));
    expect(await hangar(['sandbox', 'cp', `${box}:/tmp/blob.bin`, path.join(back, 'copy.bin')])).toMatchObject({ code: 0 });
    expect(fs.readFileSync(path.join(back, 'copy.bin')).equals(binary)).toBe(true);
    // Into an existing folder: under its own name, as cp does.
    expect(await hangar(['sandbox', 'cp', `${box}:/tmp/project`, back])).toMatchObject({ code: 0, stdout: 'copied 4 files\n' });
    expect(treeOf(path.join(back, 'project'))).toEqual(treeOf(tree));

    const missing = await hangar(['sandbox', 'cp', `${box}:/tmp/nothing-here`, back]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('/tmp/nothing-here does not exist in the sandbox');
    const readOnly = await hangar(['sandbox', 'cp', path.join(local, 'blob.bin'), `${box}:/usr/blob.bin`]);
    expect(readOnly.code).toBe(1);
    // The sandbox runs on base-image, the default, whose root is an overlay: /usr is the image's, root's.
    expect(readOnly.stderr).toMatch(/writing \/usr\/blob.bin in the sandbox: 403 permission denied/);
  });
});

/** The binary run on a terminal of its own: util-linux `script` gives it a PTY, fed from a pipe. */
function onTerminal(args: string[], input: string): Promise<HangarRun> {
  const command = [process.execPath, hangarBinary(), ...args].map((word) => `'${word.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], { env: { PATH: process.env.PATH ?? '', HOME: home, TERM: 'xterm', ...env } });
  child.stdin.end(input);
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr: '' }));
  });
}

describe('hangar sandbox shell', () => {
  it("piped: runs stdin as the shell's script, its output as it is, and exits with its exit code", async () => {
    const box = await sandboxNamed('cli-shell');
    expect(await hangar(['sandbox', 'shell', box], 'echo hi; exit 3\n')).toEqual({ code: 3, stdout: 'hi\n', stderr: '' });
    const both = await hangar(['sandbox', 'shell', box], 'read line; echo "got $line"; echo oops >&2\n', {});
    expect(both).toEqual({ code: 0, stdout: 'got \n', stderr: 'oops\n' });
    const fed = await hangar(['sandbox', 'shell', box], 'read a\nfirst line\necho "a=$a"\n');
    expect(fed).toMatchObject({ code: 0, stdout: 'a=first line\n' });

    // On a terminal: the sandbox's terminal, in raw mode; what the shell computes comes back, and its exit code.
    const tty = await onTerminal(['sandbox', 'shell', box], 'echo tty-$((40+2))\nexit 4\n');
    expect(tty.stdout).toContain('tty-42');
    expect(tty.code).toBe(4);
  });
});

/** A deployable folder: an agent serving, with busybox httpd, what the image and its ENV hold. */
function agentFolder(name: string, dockerfile: string): string {
  const dir = fs.mkdtempSync(path.join(scratch, 'deploy-'));
  fs.writeFileSync(path.join(dir, 'hangar.json'), JSON.stringify({ kind: 'agents', name, spec: { runtime: { command: ['sh', '/app/run.sh'] } } }));
  fs.writeFileSync(path.join(dir, 'run.sh'), 'mkdir -p /tmp/www && { cat /opt/added.txt; echo "$GREETING"; } > /tmp/www/index.html && exec busybox httpd -f -p "$PORT" -h /tmp/www\n');
  fs.writeFileSync(path.join(dir, 'added.txt'), 'added by the build\n');
  fs.writeFileSync(path.join(dir, 'Dockerfile'), dockerfile);
  return dir;
}

describe('hangar deploy with a Dockerfile', () => {
  let base: string;
  beforeAll(() => {
    base = `${registry.address}/${unique('test/box')}:1`;
    buildTestImage(path.join(scratch, 'layout'), 'box', { files: {}, env: ['PATH=/bin'] });
    pushTestImage(path.join(scratch, 'layout'), 'box', base);
  });

  it('builds the image (its steps as progress), runs the agent on it, and reuses the image when nothing changed', async () => {
    const name = unique('cli-built');
    const dir = agentFolder(name, `FROM ${base}\nENV GREETING=from-the-image\nCOPY added.txt /opt/added.txt\n`);
    const run = await hangar(['deploy', dir]);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(new RegExp(`^build: build context sent \\([0-9.]+ KiB\\): building ${name}:ctx-[0-9a-f]{20}$`, 'm'));
    expect(run.stderr).not.toContain('sending the build context');
    expect(run.stderr).toMatch(/^build: step 3\/3: COPY added.txt \/opt\/added.txt/m);
    expect(run.stderr).toMatch(new RegExp(`^build: image ${name}:ctx-[0-9a-f]{20} built$`, 'm'));
    expect(run.stderr).toMatch(/^deploy: DEPLOYED: revision 1/m);
    expect(run.stdout).toMatch(/^DEPLOYED: http/);

    const again = await hangar(['deploy', dir, '--output', 'json']);
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(new RegExp(`^build: image ${name}:ctx-[0-9a-f]{20} is built already`, 'm'));
    expect(again.stderr).toMatch(/^deploy: DEPLOYED: revision 2/m);
    const resource = JSON.parse(again.stdout) as { metadata: { name: string }; spec: { runtime: { image: string } } };
    expect(resource.metadata.name).toBe(name);
    expect(resource.spec.runtime.image).toMatch(new RegExp(`^${name}:ctx-[0-9a-f]{20}$`));
    // On a terminal: a bar per stage, redrawn in place (carriage return, erase line), then the result.
    const drawn = await onTerminal(['deploy', dir], '');
    expect(drawn.code).toBe(0);
    expect(drawn.stdout).toContain('\r\u001b[2Kupload [########################] 100%');
    expect(drawn.stdout).toContain('\r\u001b[2Kbuild  [########################] 100% image');
    expect(drawn.stdout).toMatch(/DEPLOYED: revision 3[^\n]*\r?\nDEPLOYED: http/);
    const image = await hangar(['get', 'images', name, '-o', 'json']);
    expect((JSON.parse(image.stdout) as { spec: { tags: { reference: string; state: string }[] } }).spec.tags).toEqual([expect.objectContaining({ reference: resource.spec.runtime.image, state: 'READY' })]);
  });

  it('a Dockerfile the platform refuses, and an agent that exits, are exit 1 with the reason', async () => {
    const refused = await hangar(['deploy', agentFolder(unique('cli-bad'), `FROM ${base}\nHEALTHCHECK NONE\n`)]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/hangar: the image build of cli-bad-[0-9a-f]+:ctx-[0-9a-f]+ was refused: 400 .*Dockerfile line 2: the instruction HEALTHCHECK is not supported/);
    expect(refused.stdout).toBe('');

    // Mistakes in the folder are usage errors (exit 2) before anything is sent.
    const both = agentFolder(unique('cli-both'), `FROM ${base}\n`);
    fs.writeFileSync(path.join(both, 'hangar.json'), JSON.stringify({ kind: 'agents', name: 'both', spec: { runtime: { image: 'other:1' } } }));
    expect(await hangar(['deploy', both])).toMatchObject({ code: 2, stderr: expect.stringContaining("spec.runtime.image is 'other:1' but the folder has a Dockerfile") });
    fs.writeFileSync(path.join(both, 'hangar.json'), JSON.stringify({ kind: 'sandboxes', name: 'both' }));
    expect(await hangar(['deploy', both])).toMatchObject({ code: 2, stderr: expect.stringContaining("'kind' must be one of agents, functions, models, jobs (got 'sandboxes')") });
    expect((await hangar(['get', 'agents', 'both'])).code).toBe(1);

    const name = unique('cli-crash');
    const crashing = agentFolder(name, `FROM ${base}\n`);
    fs.writeFileSync(path.join(crashing, 'run.sh'), 'echo bye; exit 7\n');
    const failed = await hangar(['deploy', crashing]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/hangar: deploy failed: revision 1 .*exited with code 7/);
    expect(failed.stdout).toBe('');
  });
});
