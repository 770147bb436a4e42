import { once } from 'node:events';
import { SandboxInstance } from '@blaxel/core';
import WebSocket from 'ws';
import { unique } from '../../helpers/platform';
import { deployedSandbox, startReferenceSdkPlatform, type ReferenceSdkPlatform } from '../../helpers/reference-sdk';

// A closing sandbox gateway does not wait on streams that last as long as their callers want: a
// live log stream (here a process that runs for ten minutes) would otherwise hold close() until
// it ends, and so would a WebSocket (a terminal), which Node's server stops tracking once upgraded
// but still waits for. After a grace period the gateway cuts both, and the callers see them end.
jest.setTimeout(120_000);

let hangar: ReferenceSdkPlatform | undefined;
const name = unique('close');

afterAll(async () => {
  await hangar?.stop();
});

test('close() ends while a caller still reads a live stream and holds a terminal through the gateway, and both are cut', async () => {
  hangar = await startReferenceSdkPlatform('gateway-close');
  await SandboxInstance.create({ metadata: { name }, spec: { runtime: { image: 'hangar/base:latest', memory: 256 } } });
  const sandbox = await deployedSandbox(name);
  await sandbox.process.exec({ name: 'long', command: 'echo started; sleep 600' });
  const res = await fetch(`${sandbox.metadata.url}/process/long/logs/stream`, { headers: { authorization: `Bearer ${hangar.tenant.admin.apiKey}` } });
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  expect(new TextDecoder().decode((await reader.read()).value)).toContain('started');
  const cut = (async () => {
    for (;;) {
      const chunk = await reader.read().catch(() => ({ done: true }));
      if (chunk.done) return 'cut';
    }
  })();
  const terminal = new WebSocket(`${sandbox.metadata.url!.replace(/^http/, 'ws')}/terminal/ws`, { headers: { authorization: `Bearer ${hangar.tenant.admin.apiKey}` } });
  await once(terminal, 'open');
  const terminalClosed = once(terminal, 'close');
  // Without the grace period close() waits for the stream, which lasts ten minutes, and for the
  // terminal, open until its caller closes it: jest's timeout fails the test long before.
  await hangar.gateway.close();
  expect(await cut).toBe('cut');
  await terminalClosed;
  expect(terminal.readyState).toBe(WebSocket.CLOSED);
});
