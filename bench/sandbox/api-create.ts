import { buildSandboxGatewayApp } from '../../api/gateway/sandbox-app';
import { benchConfig, startBenchPlatform } from '../common/platform';
import { percentile } from '../common/stats';
import { formatTable } from '../../domain/text-table';

/**
 * Sandbox creation the way a user sees it: POST /v0/sandboxes (row + lifecycle workflow + node
 * activity + agent health) until the first POST /process through the gateway succeeds, next to
 * the runtime's own create (the floor: the same start without the API and Temporal). Pass
 * BENCH_WARM_POOL to measure with started sandboxes waiting.
 */
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const WARM_POOL = Number(process.env.BENCH_WARM_POOL ?? 0);

const log = (line: string) => console.log(line);

async function main() {
  const platform = await startBenchPlatform(benchConfig('sandbox-api', 56640, { HANGAR_SANDBOX_WARM_POOL: String(WARM_POOL) }), log);
  const { app, credentials, runtime, config } = platform;
  const gateway = await buildSandboxGatewayApp(config, runtime);
  // Steady state of a pool sized for the arrival rate: a started sandbox is waiting.
  const poolReady = async () => {
    while (WARM_POOL > 0 && runtime.warmPoolStatus().ready === 0) await new Promise((resolve) => setTimeout(resolve, 10));
  };
  const headers = { authorization: `Bearer ${credentials.apiKey}`, 'x-service-workspace': credentials.workspace };
  const viaApi: number[] = [];
  const direct: number[] = [];
  // Deleted after the runs, so that no teardown competes with a measured create.
  const names: string[] = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      const name = `bench-${i}-${Date.now().toString(36)}`;
      await poolReady();
      const began = performance.now();
      const created = await app.inject({ method: 'POST', url: '/v0/sandboxes', headers, payload: { metadata: { name }, spec: { runtime: { memory: 256 } } } });
      if (created.statusCode !== 200) throw new Error(`create: ${created.body}`);
      const url = new URL(created.json().metadata.url);
      for (;;) {
        const res = await gateway.inject({
          method: 'POST',
          url: `${url.pathname}/process`,
          headers: { host: url.host, authorization: headers.authorization, 'content-type': 'application/json' },
          payload: JSON.stringify({ command: 'true', waitForCompletion: true }),
        });
        if (res.statusCode === 200) break;
        if (res.statusCode !== 503) throw new Error(`process: ${res.statusCode} ${res.body}`);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      viaApi.push(performance.now() - began);
      names.push(name);

      const id = `bench-direct-${i}-${process.pid}`;
      await poolReady();
      const start = performance.now();
      await runtime.start({ id, workspaceId: 'bench', image: 'base-image', memoryMb: 256, envs: [], volumes: [] });
      direct.push(performance.now() - start);
      await runtime.remove(id);
    }
    const p = (xs: number[], q: number) => percentile(xs, q).toFixed(1);
    console.log(
      '\n' +
        formatTable(
          ['measure', 'p50 ms', 'p95 ms', 'floor', 'p50 ms', 'ratio'],
          [
            [
              `POST /v0/sandboxes -> first POST /process ok (warm pool ${WARM_POOL})`,
              p(viaApi, 50),
              p(viaApi, 95),
              'runtime start alone',
              p(direct, 50),
              `${(percentile(viaApi, 50) / percentile(direct, 50)).toFixed(1)}x`,
            ],
          ],
        ),
    );
  } finally {
    for (const name of names) await app.inject({ method: 'DELETE', url: `/v0/sandboxes/${name}`, headers });
    await gateway.close();
    await platform.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
