import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { flushUsageOutbox } from '../../../activities/usage-flush';
import { usageTables } from '../../../domain/billing/storage';
import { repoRoot } from '../../../scripts/stack/binaries';
import { launchBrowser, requireBuiltConsole, signInWithKey, type TestBrowser } from '../../helpers/browser';
import { isoSeconds, seedUsage, todayUtc } from '../../helpers/console-billing';
import { createTenant, startTestApp, type TestApp, type TestTenant } from '../../helpers/platform';

/**
 * The console's billing page in a real browser against the platform: what its chart and table
 * show is read from the DOM and compared with the metrics API's own answer for seeded usage.
 */

let t: TestApp;
let tenant: TestTenant;
let browser: TestBrowser;
let origin: string;
const DAY_MS = 86_400_000;
const end = todayUtc() + DAY_MS;
const start = end - 14 * DAY_MS;


beforeAll(async () => {
  requireBuiltConsole();
  t = await startTestApp();
  tenant = await createTenant(t.app.pg, 'console-bill');
  // 101 groups: more than one page of the metrics API.
  // Over the 13 days before today (events may not be in the future); the window adds today.
  const events = seedUsage(tenant.workspace, { groups: 101, days: 13, end: todayUtc() });
  const ingested = await t.call(tenant.admin.apiKey, { method: 'POST', url: `/v0/accounts/${tenant.accountId}/usage-events`, payload: { events } });
  expect(ingested.json()).toMatchObject({ accepted: events.length });
  await flushUsageOutbox(t.app.pg, t.app.clickhouse, usageTables(t.config.clickhouseDatabase), { gatherMs: 0 });
  origin = await t.app.listen({ host: '127.0.0.1', port: 0 });
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

async function metrics(query: Record<string, string>): Promise<any> {
  const answer = await t.call(tenant.admin.apiKey, { method: 'GET', url: `/v0/accounts/${tenant.accountId}/metrics?${new URLSearchParams(query)}` });
  expect(answer.statusCode).toBe(200);
  return answer.json();
}

/** What the page shows: the table's groups and costs, the totals, and the chart's bucket totals. */
async function shown(page: Page) {
  await page.locator('.chart[data-drawn]').waitFor();
  const attribute = async (name: string) => (await page.locator(`[${name}]`).getAttribute(name)) ?? '';
  return {
    rows: (await page
      .locator('table.groups tbody tr')
      .evaluateAll((rows) => rows.map((tr: any) => ({ group: tr.getAttribute('data-group'), cost: Number(tr.getAttribute('data-cost')), text: tr.innerText })))) as { group: string; cost: number; text: string }[],
    totalCost: Number(await attribute('data-total-cost')),
    pageCost: Number(await attribute('data-page-cost')),
    bucketTotals: JSON.parse(await attribute('data-bucket-totals')) as number[],
    timestamps: JSON.parse(await attribute('data-timestamps')) as string[],
  };
}

const nano = (n: number) => Math.round(n * 1e9);

it('draws the cost per daily bucket by resource type and dimension, with the usage of each group and the total of the API', async () => {
  const page = await browser.context.newPage();
  const query = { startTime: isoSeconds(start), endTime: isoSeconds(end), resolution: 'daily', groupBy: 'resource_type,billing_dimension' };
  await signInWithKey(page, `${origin}/console/billing?start=${query.startTime}&end=${query.endTime}&resolution=daily&groupBy=${query.groupBy}`, tenant.admin.apiKey);
  const view = await shown(page);
  // HANGAR_CONSOLE_SCREENSHOTS=<folder>: the README's screenshot of this page.
  if (process.env.HANGAR_CONSOLE_SCREENSHOTS) await page.screenshot({ path: path.resolve(repoRoot(), process.env.HANGAR_CONSOLE_SCREENSHOTS, 'console-billing.png'), fullPage: true });
  const api = await metrics(query);
  expect(view.rows.map((r) => r.group)).toEqual(api.data.map((e: any) => `${e.resourceType} / ${e.billingDimension}`));
  expect(view.rows.map((r) => nano(r.cost))).toEqual(api.data.map((e: any) => nano(e.summary.cost)));
  expect(nano(view.totalCost)).toBe(nano(api.summary.totalCost));
  expect(nano(view.pageCost)).toBe(nano(api.summary.totalCost));
  expect(view.timestamps).toEqual(api.data[0].timeseries.map((p: any) => p.timestamp));
  expect(view.timestamps).toHaveLength(14);
  const perBucket = api.data[0].timeseries.map((_: unknown, b: number) => api.data.reduce((sum: number, e: any) => sum + e.timeseries[b].cost, 0));
  expect(view.bucketTotals.map(nano)).toEqual(perBucket.map(nano));
  expect(view.bucketTotals.some((c) => c > 0)).toBe(true);
  // Usage in each group's own unit, as the API counts it.
  const hours = api.data.find((e: any) => e.billingDimension === 'custom_domain_active_time_hours');
  expect(view.rows.find((r) => r.group?.endsWith('custom_domain_active_time_hours'))?.text).toContain(`${hours.summary.usage.hours.toLocaleString('en-US')} hours`);
  await page.close();
}, 60_000);

it('pages through 101 groups, the total matching summary.totalCost on each page, and exports every group as CSV', async () => {
  const page = await browser.context.newPage();
  const query = { startTime: isoSeconds(start), endTime: isoSeconds(end), resolution: 'daily', groupBy: 'resource_name' };
  await signInWithKey(page, `${origin}/console/billing?start=${query.startTime}&end=${query.endTime}&resolution=daily&groupBy=resource_name&limit=100`, tenant.admin.apiKey);
  const first = await shown(page);
  const api = await metrics(query);
  expect(first.rows).toHaveLength(100);
  expect(first.rows.map((r) => r.group)).toEqual(api.data.map((e: any) => e.resourceName));
  await page.getByRole('button', { name: 'Next page' }).click();
  await page.getByText('Page 2').waitFor();
  const second = await shown(page);
  const rest = await metrics({ ...query, cursor: api.meta.nextCursor });
  expect(second.rows.map((r) => r.group)).toEqual(rest.data.map((e: any) => e.resourceName));
  expect(second.rows.map((r) => r.group)).toEqual(['res-100']);
  expect(nano(second.totalCost)).toBe(nano(api.summary.totalCost));
  expect(nano(first.pageCost) + nano(second.pageCost)).toBe(nano(api.summary.totalCost));
  expect(await page.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);

  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV (all pages)' }).click()]);
  const [header, ...lines] = fs.readFileSync((await download.path()) as string, 'utf8').trimEnd().split('\r\n');
  expect(header).toBe('bucket_start,resource_name,cost_usd,usage_gbs,usage_count,usage_hours');
  expect(lines).toHaveLength(101 * 14);
  expect(new Set(lines.map((l) => l.split(',')[1])).size).toBe(101);
  expect(lines.reduce((sum, l) => sum + nano(Number(l.split(',')[2])), 0)).toBe(nano(api.summary.totalCost));
  await page.close();
}, 60_000);

it('says which parameter the API refused', async () => {
  const page = await browser.context.newPage();
  // A window the hourly resolution does not cover: the API's 400 names the parameter, the page shows it.
  await signInWithKey(page, `${origin}/console/billing?start=${isoSeconds(start)}&end=${isoSeconds(end)}&resolution=hourly`, tenant.admin.apiKey);
  await expect(page.getByRole('alert').textContent()).resolves.toMatch(/resolution/);
  await page.close();
}, 60_000);
