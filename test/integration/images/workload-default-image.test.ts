import type { FastifyInstance } from 'fastify';
import fs from 'node:fs';
import path from 'node:path';
import { packFolder } from '../../../cli/deploy';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { testRuntime } from '../../helpers/sandbox-runtime';
import { eventually, type RunningWorker } from '../../helpers/workers';
import { startWorkloadPlatform, stopRuntimeTest } from '../../helpers/runtime-platform';

// An agent naming no image runs on base-image, the default: its bundle runs the image's Node
// (Debian 12's 18) and Python 3.11, and its deployment found the image on the node in the
// prepare step (its events say so). The suite's data folder has base-image.
jest.setTimeout(180_000);

let t: TestApp;
let tenant: TestTenant;
let gateway: FastifyInstance;
let runUrl: string;
let control: RunningWorker;
let node: RunningWorker;
let runtime: ReturnType<typeof testRuntime>;
let scratch: string;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('wl-default-image') });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  tenant = await createTenant(t.app.pg, 'wl-default');
  ({ runtime, gateway, runUrl, control, node } = await startWorkloadPlatform(t));
  scratch = path.join(t.config.dataDir, unique('wl-default-scratch'));
  fs.mkdirSync(scratch, { recursive: true });
}, 120_000);

afterAll(async () => {
  await stopRuntimeTest({ runtime, node, control, gateway, t, scratch });
}, 60_000);

const api = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: object | Buffer, headers?: Record<string, string>) =>
  t.call(tenant.admin.apiKey, { method, url, payload, workspace: tenant.workspace, ...(headers ? { headers } : {}) });

test("an agent naming no image runs on base-image: Node 18 and Python 3.11, the image found in the deployment's prepare step", async () => {
  const agent = unique('agent');
  const created = await api('POST', '/v0/agents', { metadata: { name: agent }, spec: { runtime: { command: ['node', 'main.js'], memory: 256 } } });
  expect(created.json().spec.runtime.image).toBe('base-image');
  const dir = fs.mkdtempSync(path.join(scratch, 'bundle-'));
  const server = [
    "const { execFileSync } = require('node:child_process');",
    "const python = execFileSync('python3', ['--version'], { encoding: 'utf8' }).trim();",
    "require('node:http').createServer((req, res) => res.end(JSON.stringify({ node: process.version, python }))).listen(Number(process.env.PORT), process.env.HOST);",
  ].join('\n');
  fs.writeFileSync(path.join(dir, 'main.js'), server);
  expect((await api('PUT', `/v0/agents/${agent}/code`, await packFolder(dir), { 'content-type': 'application/gzip' })).statusCode).toBeLessThan(300);
  const settled = await eventually('revision 1 settled', async () => {
    const body = (await api('GET', `/v0/agents/${agent}`)).json();
    const last = body.events[body.events.length - 1];
    return last.message.startsWith('revision 1') && (last.status === 'DEPLOYED' || last.status === 'FAILED') ? body : undefined;
  }, 120_000);
  expect(settled.events.at(-1)).toEqual(expect.objectContaining({ status: 'DEPLOYED' }));
  expect(settled.events.map((e: { message: string }) => e.message)).toEqual(expect.arrayContaining([expect.stringMatching(/^image 'base-image' is on the node \(sha256:[0-9a-f]{64}\)$/)]));
  const answer = (await (await fetch(`${runUrl}/${tenant.workspace}/agents/${agent}`, { headers: { authorization: `Bearer ${tenant.admin.apiKey}` } })).json()) as { node: string; python: string };
  expect(answer.node).toMatch(/^v18\./);
  expect(answer.python).toMatch(/^Python 3\.11\./);
});
