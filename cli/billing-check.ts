import fs from 'node:fs';
import path from 'node:path';
import { createClickHouse } from '../store/clickhouse-client';
import { createPool } from '../store/postgres-pool';
import { formatTable } from '../domain/text-table';
import { DEFAULT_RECONCILE_OPTIONS, reconcile, type ReconcileReport } from '../domain/billing/reconciliation';
import { usageTables } from '../domain/billing/storage';
import { loadConfig, type HangarConfig } from '../domain/config';
import { parseDurationSeconds } from '../domain/duration';
import { CLICKHOUSE_USER } from '../scripts/stack/clickhouse-config';
import { localPostgresUrl } from '../scripts/stack/postgres';
import { loadReconciliationInputs, pendingUsage } from './billing-sources';

/**
 * `npm run billing:check -- --since 24h [--account <id>] [--output table|json]`: lists every
 * resource whose bills disagree with its state history over the window (see
 * domain/billing/reconciliation.ts), and exits with 1 when any does (2 for bad options).
 */

export interface CheckOptions {
  sinceMs: number;
  /** Usage that ended within this time is not judged yet: its last bill may still be on its way. */
  settleMs: number;
  accountId?: string;
  output: 'table' | 'json';
}

const USAGE = 'usage: npm run billing:check -- --since <duration, e.g. 24h> [--account <account id>] [--settle <duration, default 15s>] [--output table|json]';

/** Parses the options; an error names the option at fault. */
export function parseCheckOptions(argv: string[]): CheckOptions {
  const options: CheckOptions = { sinceMs: 24 * 3_600_000, settleMs: DEFAULT_RECONCILE_OPTIONS.settleMs, output: 'table' };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined || value.startsWith('--')) throw new Error(`${flag} needs a value\n${USAGE}`);
    if (flag === '--since') {
      const seconds = parseDurationSeconds(value);
      if (!seconds) throw new Error(`--since must be a duration such as 90m, 24h or 7d, got '${value}'\n${USAGE}`);
      options.sinceMs = seconds * 1000;
    } else if (flag === '--settle') {
      const seconds = parseDurationSeconds(value);
      if (seconds === undefined) throw new Error(`--settle must be a duration such as 0s, 15s or 2m, got '${value}'\n${USAGE}`);
      options.settleMs = seconds * 1000;
    } else if (flag === '--account') {
      options.accountId = value;
    } else if (flag === '--output') {
      if (value !== 'table' && value !== 'json') throw new Error(`--output must be table or json, got '${value}'\n${USAGE}`);
      options.output = value;
    } else {
      throw new Error(`unknown option '${flag}'\n${USAGE}`);
    }
  }
  return options;
}

/** The services the platform uses: DATABASE_URL and CLICKHOUSE_URL, else the local ones `npm start` runs. */
export function serviceEndpoints(config: HangarConfig): HangarConfig {
  if (config.databaseUrl && config.clickhouseUrl) return config;
  const passwordsFile = path.join(config.dataDir, 'service-passwords.json');
  if (!fs.existsSync(passwordsFile)) {
    throw new Error(`no local stack in ${config.dataDir} (no service-passwords.json): set DATABASE_URL and CLICKHOUSE_URL, or HANGAR_DATA_DIR`);
  }
  const passwords = JSON.parse(fs.readFileSync(passwordsFile, 'utf8')) as { postgres: string; clickhouse: string };
  return {
    ...config,
    databaseUrl: config.databaseUrl ?? localPostgresUrl(passwords.postgres, config.postgresPort),
    clickhouseUrl: config.clickhouseUrl ?? `http://${CLICKHOUSE_USER}:${encodeURIComponent(passwords.clickhouse)}@127.0.0.1:${config.clickhouseHttpPort}/`,
  };
}

/** The comparison, and the usage accepted but not in ClickHouse yet (not counted as billed). */
export type CheckReport = ReconcileReport & { pending: { events: number; oldest?: number } };

/** Reads both sides for the window ending now and compares them. */
export async function checkBilling(config: HangarConfig, options: Pick<CheckOptions, 'sinceMs' | 'settleMs' | 'accountId'>, now = Date.now()): Promise<CheckReport> {
  const pg = createPool(config.databaseUrl, 3);
  const clickhouse = createClickHouse(config);
  try {
    const window = { since: now - options.sinceMs, until: now, accountId: options.accountId };
    const [inputs, pending] = await Promise.all([loadReconciliationInputs(pg, clickhouse, usageTables(config.clickhouseDatabase), window), pendingUsage(pg, options.accountId)]);
    const report = reconcile(inputs, inputs.billed, { ...DEFAULT_RECONCILE_OPTIONS, since: window.since, until: window.until, settleMs: options.settleMs });
    return { ...report, pending };
  } finally {
    await Promise.allSettled([pg.end(), clickhouse.close()]);
  }
}

export function formatReport(report: CheckReport): string {
  const window = `${new Date(report.since).toISOString()} to ${new Date(report.until).toISOString()}`;
  let summary = `${report.comparisons.length} billed quantities (resource x dimension) checked against the state history, ${window}: ${report.disagreements.length} disagree`;
  if (report.pending.events > 0) {
    summary += `\n${report.pending.events} accepted usage events are not in ClickHouse yet (oldest accepted ${new Date(report.pending.oldest!).toISOString()}): their resources may show as billed less until the flush catches up`;
  }
  if (report.disagreements.length === 0) return summary;
  const rows = report.disagreements.map((d) => [
    d.workspace,
    d.resourceType,
    d.resourceName,
    d.resourceUuid,
    d.billingDimension,
    d.billed.toFixed(6),
    d.expected.toFixed(6),
    d.expected > 0 ? `${(((d.billed - d.expected) / d.expected) * 100).toFixed(2)}%` : '-',
    d.reason,
  ]);
  return `${formatTable(['workspace', 'type', 'name', 'uuid', 'dimension', 'billed', 'history', 'difference', 'reason'], rows)}\n\n${summary}`;
}

/** JSON: the disagreements in full, the agreements counted (a day of a busy platform has many), times in RFC 3339. */
function jsonReport(report: CheckReport) {
  const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
  return {
    since: iso(report.since),
    until: iso(report.until),
    checked: report.comparisons.length,
    disagreements: report.disagreements.map((d) => ({ ...d, from: iso(d.from), to: iso(d.to) })),
    pending: { events: report.pending.events, oldest: iso(report.pending.oldest) },
  };
}

/** The command; answers its exit status. */
export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env, write: (text: string) => void = (text) => process.stdout.write(text)): Promise<number> {
  let options: CheckOptions;
  try {
    options = parseCheckOptions(argv);
  } catch (err) {
    write(`${(err as Error).message}\n`);
    return 2;
  }
  const report = await checkBilling(serviceEndpoints(loadConfig(env)), options);
  write(options.output === 'json' ? `${JSON.stringify(jsonReport(report), null, 2)}\n` : `${formatReport(report)}\n`);
  return report.disagreements.length > 0 ? 1 : 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (status) => process.exit(status),
    (err: Error) => {
      process.stderr.write(`billing:check failed: ${err.message}\n`);
      process.exit(2);
    },
  );
}
