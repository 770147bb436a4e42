import type { FastifyInstance } from 'fastify';
import { createTenant, startTestApp, unique, type TestApp, type TestTenant } from '../../helpers/platform';
import { tenantResources } from '../../helpers/resources';
import { stopRuntimeTest, startSandboxPlatform } from '../../helpers/runtime-platform';
import { testRuntime } from '../../helpers/sandbox-runtime';
import { eventually, type RunningWorker } from '../../helpers/workers';

/**
 * The resume-versus-freeze race of issue #14 against the real node: one request to each of
 * several sandboxes at offsets sweeping across their idle deadline (before, during and after the
 * freeze). None may end up running while reported STANDBY, nor frozen while reported RUNNING.
 */

const IDLE_SECONDS = 1;
const SANDBOXES = 6;
// From well before the idle deadline to well after the freeze, evenly spread.
const OFFSETS_MS = Array.from({ length: SANDBOXES }, (_, i) => IDLE_SECONDS * 1000 - 300 + i * 150);

let t: TestApp;
let tenant: TestTenant;
let gateway: FastifyInstance;
let control: RunningWorker;
let node: RunningWorker | undefined;
let runtime: ReturnType<typeof testRuntime>;

beforeAll(async () => {
  t = await startTestApp({ taskQueue: unique('standby-race'), sandboxIdleSeconds: IDLE_SECONDS });
  tenant = await createTenant(t.app.pg, 'race');
  ({ runtime, gateway, control, node } = await startSandboxPlatform(t));
}, 60_000);

afterAll(() => stopRuntimeTest({ runtime, node, control, gateway, t }), 60_000);

const resources = () => tenantResources(t, tenant);

test('requests sweeping across the idle deadline leave every sandbox reported as the node has it', async () => {
  const names = OFFSETS_MS.map((_, i) => `race-${i}`);
  for (const name of names) {
    expect((await resources().api('POST', '/v0/sandboxes', { metadata: { name }, spec: { runtime: { memory: 128 } } })).statusCode).toBe(200);
  }
  await Promise.all(names.map((name) => resources().status('sandboxes', name, 'DEPLOYED', 90_000)));
  const ids = await Promise.all(names.map((name) => resources().idOf('sandboxes', name)));

  // Each sandbox is used once, then gets its one request at its offset after that use.
  await Promise.all(
    names.map(async (name, i) => {
      expect((await resources().sandboxCall(gateway, name, 'GET', '/health')).statusCode).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, OFFSETS_MS[i]));
      expect((await resources().sandboxCall(gateway, name, 'GET', '/health')).statusCode).toBe(200);
    }),
  );

  // Whatever each went through, all settle into standby with the node agreeing: a sandbox left
  // running while reported STANDBY would never be frozen again.
  for (const [i, name] of names.entries()) {
    await eventually(`${name} in standby, frozen on the node`, async () => {
      const state = (await resources().api('GET', `/v0/sandboxes/${name}`)).json().state;
      const frozen = await runtime.isFrozen(ids[i]);
      if (state === 'STANDBY' && !frozen) {
        // Allowed only for a moment (a thaw whose signal is on its way): checked again below.
        return undefined;
      }
      return state === 'STANDBY' && frozen ? true : undefined;
    }, 30_000);
  }
  // And they stay that way: no sandbox runs while reported STANDBY, none is frozen while RUNNING.
  for (const [i, name] of names.entries()) {
    const state = (await resources().api('GET', `/v0/sandboxes/${name}`)).json().state;
    expect({ name, state, frozen: await runtime.isFrozen(ids[i]) }).toEqual({ name, state: 'STANDBY', frozen: true });
  }
}, 240_000);
