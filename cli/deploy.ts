import fs from 'node:fs';
import path from 'node:path';
import { main } from './hangar';

/**
 * The deploy of a folder, as tests, benchmarks and `node dist/cli/deploy.js` know it; the one
 * implementation is cli/hangar/deploy-folder.ts, which `hangar deploy` runs too.
 */
export { deployFolder, deployFolderOutcome, packFolder, readManifest, type DeployManifest, type DeployOptions, type DeployOutcome, type DeployTarget } from './hangar/deploy-folder';

/** The local stack's first account's key (scripts/prepare writes it), for `node dist/cli/deploy.js`. */
function localStackKey(env: NodeJS.ProcessEnv): string | undefined {
  const file = path.join(env.HANGAR_DATA_DIR ?? '.data', 'credentials.json');
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as { apiKey: string }).apiKey : undefined;
}

if (require.main === module) {
  // `node dist/cli/deploy.js <folder>` is `hangar deploy` against the local stack, with its key.
  const env = { ...process.env, HANGAR_URL: process.env.HANGAR_URL ?? process.env.HANGAR_BASE_URL ?? 'http://127.0.0.1:8080' };
  const key = process.env.HANGAR_API_KEY ?? localStackKey(process.env);
  void main(['deploy', ...process.argv.slice(2)], key ? { ...env, HANGAR_API_KEY: key } : env).then((status) => {
    process.exitCode = status;
  });
}
