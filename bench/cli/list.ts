import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { buildApp } from '../../api/app';
import { formatTable } from '../../domain/text-table';
import { prepare } from '../../scripts/prepare';
import { repoRoot } from '../../scripts/stack/binaries';
import { createPool } from '../../store/postgres-pool';
import { benchConfig } from '../common/platform';
import { configOnStack } from '../common/stack';
import { percentile } from '../common/stats';

/**
 * What the CLI adds to listing (run after a build: `node dist/bench/cli/list.js`): `hangar list
 * sandboxes --output json` as a child process against a workspace of 1,000 sandboxes, against
 * the bare `GET /v0/sandboxes` with fetch (the floor) and against a bare `node -e` that fetches
 * the same list and prints it (a child process's own start-up, the second floor), in the same run.
 * The sandboxes are resource rows copied in PostgreSQL from one made through the API: creating
 * 1,000 real ones would measure the runtime, not the listing. Options (environment): BENCH_RUNS (20 timed runs per figure).
 */
const RUNS = Number(process.env.BENCH_RUNS ?? 20);
const SANDBOXES = 1000;
const run = promisify(execFile);

async function timed(runs: number, operation: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 3; i++) await operation();
  const samples: number[] = [];
  for (let i = 0; i < runs; i++) {
    const began = performance.now();
    await operation();
    samples.push(performance.now() - began);
  }
  return percentile(samples, 50);
}

/**
 * 1,000 sandboxes in the bootstrap workspace: one created through the API (its row as the API
 * stores it; no worker runs, so it stays DEPLOYING), then copied under other names in PostgreSQL.
 */
async function seed(url: string, headers: Record<string, string>, databaseUrl: string): Promise<void> {
  const template = 'bench-box-0000';
  const created = await fetch(`${url}/v0/sandboxes`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ metadata: { name: template, labels: { team: 'bench' } }, spec: { runtime: { memory: 1024 } } }),
  });
  if (created.status !== 200 && created.status !== 409) throw new Error(`creating ${template} answered ${created.status}: ${await created.text()}`);
  const pg = createPool(databaseUrl, 1);
  try {
    // The copies of an earlier run on the same data folder go: they are made again from this template.
    await pg.query(`DELETE FROM resources WHERE kind = 'sandboxes' AND name LIKE 'bench-box-%' AND name <> $1`, [template]);
    await pg.query(
      `INSERT INTO resources (id, workspace_id, kind, name, display_name, labels, spec, status, state, events, created_by, updated_by)
       SELECT gen_random_uuid(), r.workspace_id, r.kind, 'bench-box-' || lpad(i::text, 4, '0'), r.display_name, r.labels, r.spec,
              r.status, r.state, r.events, r.created_by, r.updated_by
         FROM resources r, generate_series(1, $2 - 1) AS i WHERE r.kind = 'sandboxes' AND r.name = $1
       ON CONFLICT (workspace_id, kind, name) DO NOTHING`,
      [template, SANDBOXES],
    );
  } finally {
    await pg.end();
  }
}

async function main(): Promise<void> {
  const config = benchConfig('cli', 57680);
  const { stack, credentials } = await prepare(config, (line) => console.log(`  [stack] ${line}`), { keepRunning: false });
  const app = await buildApp(configOnStack(config, stack));
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-bench-'));
  try {
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const headers = { authorization: `Bearer ${credentials.apiKey}`, 'x-service-workspace': credentials.workspace };
    await seed(url, headers, stack.databaseUrl);
    const env = { PATH: process.env.PATH ?? '', HOME: home, HANGAR_URL: url, HANGAR_API_KEY: credentials.apiKey, HANGAR_WORKSPACE: credentials.workspace };
    const listed = JSON.parse((await run(process.execPath, [path.join(repoRoot(), 'dist/cli/hangar.js'), 'list', 'sandboxes', '--output', 'json'], { env, maxBuffer: 64 << 20 })).stdout) as unknown[];
    if (listed.length < SANDBOXES) throw new Error(`hangar listed ${listed.length} sandboxes, expected at least ${SANDBOXES}`);

    const bare = await timed(RUNS, async () => (await fetch(`${url}/v0/sandboxes`, { headers })).text());
    const script = `fetch(process.env.HANGAR_URL + '/v0/sandboxes', { headers: ${JSON.stringify(headers)} }).then((r) => r.json()).then((j) => process.stdout.write(JSON.stringify(j, null, 2)))`;
    const bareProcess = await timed(RUNS, () => run(process.execPath, ['-e', script], { env, maxBuffer: 64 << 20 }));
    const cli = await timed(RUNS, () => run(process.execPath, [path.join(repoRoot(), 'dist/cli/hangar.js'), 'list', 'sandboxes', '--output', 'json'], { env, maxBuffer: 64 << 20 }));
    const ms = (value: number) => value.toFixed(1);
    console.log(`\nhangar list sandboxes --output json, ${listed.length} sandboxes: p50 ms of ${RUNS} runs each\n`);
    console.log(
      formatTable(
        ['what', 'p50 ms', 'x bare GET', 'x bare node process'],
        [
          ['bare GET /v0/sandboxes (fetch, in process)', ms(bare), '1.00', ''],
          ['bare node -e fetch + print', ms(bareProcess), (bareProcess / bare).toFixed(2), '1.00'],
          ['hangar list sandboxes --output json', ms(cli), (cli / bare).toFixed(2), (cli / bareProcess).toFixed(2)],
        ],
      ),
    );
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
    await app.close();
    await stack.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
