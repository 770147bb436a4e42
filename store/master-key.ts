import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { HangarConfig } from '../domain/config';

/**
 * The master key comes from configuration (HANGAR_MASTER_KEY, base64 of 32 bytes) or, on a
 * single machine, from `<dataDir>/master.key`, generated once with mode 0600. Several processes
 * may start together: exclusive creation makes exactly one of them write it.
 */
export function loadMasterKey(config: HangarConfig): Buffer {
  if (config.masterKey) return decode(config.masterKey, 'HANGAR_MASTER_KEY');
  const file = path.join(config.dataDir, 'master.key');
  mkdirSync(config.dataDir, { recursive: true });
  try {
    writeFileSync(file, randomBytes(32).toString('base64') + '\n', { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  // A process that lost the creation race may read before the winner's write lands.
  for (let attempt = 0; ; attempt++) {
    const text = readFileSync(file, 'utf8').trim();
    if (text || attempt >= 50) return decode(text, file);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  }
}

function decode(text: string, source: string): Buffer {
  const key = Buffer.from(text, 'base64');
  if (key.length !== 32) throw new Error(`${source} must hold 32 bytes in base64`);
  return key;
}
