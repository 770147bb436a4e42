import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Page } from 'playwright-core';
import { flushUsageOutbox } from '../../activities/usage-flush';
import { buildApp } from '../../api/app';
import { usageTables } from '../../domain/billing/storage';
import { formatTable } from '../../domain/text-table';
import { prepare } from '../../scripts/prepare';
import { repoRoot } from '../../scripts/stack/binaries';
import { launchBrowser } from '../../test/helpers/browser';
import { isoSeconds, seedUsage, todayUtc } from '../../test/helpers/console-billing';
import { benchConfig } from '../common/platform';
import { configOnStack } from '../common/stack';
import { percentile } from '../common/stats';

/**
 * The console's billing page, first load (run after a build: `npm run bench:console`): 100 groups
 * (resources) over 90 daily buckets in ClickHouse, the page opened in headless chromium with an
 * empty cache each run. Reported, never asserted:
 *  - load: navigation to the sign-in form drawn (the console's assets fetched and run);
 *  - sign-in to chart drawn: the credential checked, the metrics fetched, 100 series stacked and
 *    drawn (performance marks of the console itself, in the browser's clock);
 *  - floors in the same run: the same metrics request by fetch inside the page, and from Node;
 *  - the compiled assets' sizes, raw and gzip.
 * BENCH_RUNS (10) sets the timed runs.
 */
const RUNS = Number(process.env.BENCH_RUNS ?? 10);
const GROUPS = 100;
const DAYS = 90;
const DAY_MS = 86_400_000;

interface LoadSample {
  load: number;
  toChart: number;
  inPageFetch: number;
}

/** One first load with an empty cache: the two console figures and the page's own fetch of the same metrics. */
async function firstLoad(page: Page, url: string, apiKey: string, metricsPath: string): Promise<LoadSample> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.clearBrowserCache');
  await cdp.detach();
  await page.goto(url);
  await page.getByLabel('API key', { exact: true }).fill(apiKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('.chart[data-drawn]').waitFor({ timeout: 60_000 });
  return page.evaluate(
    async ({ metricsPath, apiKey }) => {
      const mark = (name: string) => performance.getEntriesByName(name)[0].startTime;
      const began = performance.now();
      await (await fetch(metricsPath, { headers: { authorization: `Bearer ${apiKey}` } })).json();
      return { load: mark('hangar:ready'), toChart: mark('hangar:chart-drawn') - mark('hangar:sign-in'), inPageFetch: performance.now() - began };
    },
    { metricsPath, apiKey },
  );
}

/** The files of the compiled console, raw and gzip, the billing page's (loaded first) apart from the sandbox page's. */
function assetSizes(): string[][] {
  const folder = path.join(repoRoot(), 'dist/console');
  const files = ['index.html', ...fs.readdirSync(path.join(folder, 'assets')).map((f) => `assets/${f}`)];
  return files.map((file) => {
    const bytes = fs.readFileSync(path.join(folder, file));
    return [file, file.includes('sandbox-page') ? 'sandbox page (lazy)' : 'first load', (bytes.length / 1024).toFixed(1), (gzipSync(bytes).length / 1024).toFixed(1)];
  });
}

async function main(): Promise<void> {
  if (!fs.existsSync(path.join(repoRoot(), 'dist/console/index.html'))) throw new Error('dist/console is missing: run npm run build first');
  const config = benchConfig('console', 57720);
  const { stack, credentials } = await prepare(config, (line) => console.log(`  [stack] ${line}`), { keepRunning: false });
  const app = await buildApp(configOnStack(config, stack));
  const browser = await launchBrowser();
  try {
    const origin = await app.listen({ host: '127.0.0.1', port: 0 });
    const headers = { authorization: `Bearer ${credentials.apiKey}`, 'content-type': 'application/json' };
    const events = seedUsage(credentials.workspace, { groups: GROUPS, days: DAYS - 1, end: todayUtc() });
    const ingested = await fetch(`${origin}/v0/accounts/${credentials.accountId}/usage-events`, { method: 'POST', headers, body: JSON.stringify({ events }) });
    if (ingested.status !== 202) throw new Error(`ingest answered ${ingested.status}: ${await ingested.text()}`);
    await flushUsageOutbox(app.pg, app.clickhouse, usageTables(stack.clickhouseDatabase), { gatherMs: 0 });

    const start = isoSeconds(todayUtc() - (DAYS - 1) * DAY_MS);
    const end = isoSeconds(todayUtc() + DAY_MS);
    const metricsPath = `/v0/accounts/${credentials.accountId}/metrics?${new URLSearchParams({ startTime: start, endTime: end, groupBy: 'resource_name', limit: '100', resolution: 'daily' })}`;
    const answer = (await (await fetch(origin + metricsPath, { headers })).json()) as { data: { timeseries: unknown[] }[] };
    if (answer.data.length !== GROUPS || answer.data[0].timeseries.length !== DAYS) throw new Error(`expected ${GROUPS} groups of ${DAYS} buckets, got ${answer.data.length} of ${answer.data[0]?.timeseries.length}`);
    const pageUrl = `${origin}/console/billing?start=${start}&end=${end}&resolution=daily&groupBy=resource_name&limit=100`;

    const page = await browser.context.newPage();
    await firstLoad(page, pageUrl, credentials.apiKey, metricsPath);
    const samples: LoadSample[] = [];
    const nodeFetch: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      samples.push(await firstLoad(page, pageUrl, credentials.apiKey, metricsPath));
      const began = performance.now();
      await (await fetch(origin + metricsPath, { headers })).json();
      nodeFetch.push(performance.now() - began);
    }
    report(samples, nodeFetch);
  } finally {
    await browser.close();
    await app.close();
    await stack.stop();
  }
}

function report(samples: LoadSample[], nodeFetch: number[]): void {
  const p50 = (pick: (s: LoadSample) => number) => percentile(samples.map(pick), 50);
  const floor = p50((s) => s.inPageFetch);
  const node = percentile(nodeFetch, 50);
  const ms = (value: number) => value.toFixed(1);
  console.log(`\nconsole billing page, ${GROUPS} groups x ${DAYS} daily buckets, empty cache: p50 ms of ${RUNS} runs\n`);
  console.log(
    formatTable(
      ['what', 'p50 ms', 'x in-page fetch'],
      [
        ['floor: GET metrics from Node (fetch)', ms(node), (node / floor).toFixed(2)],
        ['floor: GET metrics by fetch in the page', ms(floor), '1.00'],
        ['load: navigation to sign-in form drawn', ms(p50((s) => s.load)), (p50((s) => s.load) / floor).toFixed(2)],
        ['sign-in to chart drawn (checks, metrics, 100 series)', ms(p50((s) => s.toChart)), (p50((s) => s.toChart) / floor).toFixed(2)],
      ],
    ),
  );
  console.log('\ncompiled assets (KiB)\n');
  console.log(formatTable(['file', 'loaded', 'raw', 'gzip'], assetSizes()));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
