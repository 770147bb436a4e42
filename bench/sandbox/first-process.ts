import http from 'node:http';
import type { BwrapRuntime } from '../../runtime/bwrap-runtime';
import type { RuntimeSandboxSpec } from '../../runtime/sandbox-runtime';

/** POST /process `true` with waitForCompletion on a sandbox's socket: its status code. */
function firstProcess(socketPath: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, method: 'POST', path: '/process', headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(JSON.stringify({ command: 'true', waitForCompletion: true }));
  });
}

/** Milliseconds from asking the runtime to start `spec` to its first process answered; the sandbox is removed after. */
export async function createToFirstProcess(runtime: BwrapRuntime, spec: RuntimeSandboxSpec): Promise<number> {
  const start = process.hrtime.bigint();
  const handle = await runtime.start(spec);
  const status = await firstProcess(handle.socketPath);
  const elapsed = Number(process.hrtime.bigint() - start) / 1e6;
  if (status !== 200) throw new Error(`POST /process answered ${status}`);
  await runtime.remove(spec.id);
  return elapsed;
}
