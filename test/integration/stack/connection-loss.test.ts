import { spawn } from 'node:child_process';
import path from 'node:path';
import { testStack } from '../../setup/stack';
import { repoRoot } from '../../../scripts/stack/binaries';

jest.setTimeout(60_000);

/**
 * A process of the platform (here a stand-in using the platform's pool, as compiled for npm start)
 * holds a checked-out connection, as a transaction or the usage flush's advisory lock does, when
 * the database ends it (a restart). The process must carry on: its holder's next statement fails,
 * and the pool serves new statements on a new connection.
 */
test('a checked-out connection that the database ends does not kill the process; the pool serves on', async () => {
  const { databaseUrl } = testStack();
  const script = `
    const { createPool } = require(${JSON.stringify(path.join(repoRoot(), 'dist/store/postgres-pool.js'))});
    (async () => {
      const pool = createPool(process.env.DATABASE_URL, 2);
      const held = await pool.connect();
      const pid = (await held.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      // What a restart does to every connection: the server ends it (here from another session).
      await pool.query('SELECT pg_terminate_backend($1)', [pid]);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const next = await held.query('SELECT 1').then(() => 'answered', () => 'failed');
      held.release();
      const fresh = (await pool.query('SELECT 2 AS two')).rows[0].two;
      console.log('holder ' + next + ', pool ' + fresh);
      await pool.end();
    })();
  `;
  const child = spawn(process.execPath, ['-e', script], { env: { ...process.env, DATABASE_URL: databaseUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect({ code, output }).toEqual({ code: 0, output: 'holder failed, pool 2\n' });
});
