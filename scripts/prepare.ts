import { Pool } from 'pg';
import { bootstrap, type BootstrapCredentials } from '../store/bootstrap';
import { loadConfig, type HangarConfig } from '../domain/config';
import { startStack, type Stack, type StackOptions } from './stack';
import { applySchemas } from './stack/schema';

/**
 * Everything the platform processes need before they start: the services (started locally, or
 * external ones waited for), both schemas, and the first account with its credentials.
 * `npm start` runs it before its children; run alone (`node dist/scripts/prepare.js`) it readies
 * external services and exits, which is what docker-compose's one-shot `setup` service does.
 */
export async function prepare(
  config: HangarConfig,
  log: (line: string) => void,
  options: StackOptions = {},
): Promise<{ stack: Stack; credentials: BootstrapCredentials }> {
  const stack = await startStack(config, log, options);
  try {
    const { postgresApplied } = await applySchemas({ ...stack, clickhouseCluster: config.clickhouseCluster });
    log(`schemas up to date${postgresApplied.length ? ` (applied ${postgresApplied.join(', ')})` : ''}`);
    const pool = new Pool({ connectionString: stack.databaseUrl, max: 2 });
    const credentials = await bootstrap(pool, config).finally(() => pool.end());
    log(`account ${credentials.accountId}, workspace ${credentials.workspace}`);
    return { stack, credentials };
  } catch (err) {
    await stack.stop();
    throw err;
  }
}

if (require.main === module) {
  const log = (line: string) => console.log(`[prepare] ${line}`);
  const config = loadConfig();
  if (!config.databaseUrl || !config.clickhouseUrl || !config.temporalAddress) {
    // Services started here would stop again when this process exits.
    console.error('prepare alone needs DATABASE_URL, CLICKHOUSE_URL and TEMPORAL_ADDRESS; for a local stack use npm start');
    process.exit(2);
  }
  prepare(config, log)
    .then(({ stack }) => stack.stop())
    .then(() => log('done'))
    .catch((err) => {
      console.error(`prepare failed: ${(err as Error).message}`);
      process.exit(1);
    });
}
