import { SandboxInstance } from '@blaxel/core';
import { unique } from '../../helpers/platform';
import { deployedSandbox, startReferenceSdkPlatform, type ReferenceSdkPlatform } from '../../helpers/reference-sdk';

// A closing sandbox gateway does not wait on streams that last as long as their callers want: a
// live log stream (here a process that runs for ten minutes) would otherwise hold close() until
// it ends. After a grace period the gateway cuts it, and the caller's stream ends.
jest.setTimeout(120_000);

let hangar: ReferenceSdkPlatform | undefined;
const name = unique('close');

afterAll(async () => {
  await hangar?.stop();
});

test('close() ends while a caller still reads a live stream through the gateway, and the stream is cut', async () => {
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
  // Without the grace period close() waits for the stream, which lasts ten minutes: jest's
  // timeout fails the test long before.
  await hangar.gateway.close();
  expect(await cut).toBe('cut');
});
