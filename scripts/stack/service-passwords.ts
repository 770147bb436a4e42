import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** Passwords of the local PostgreSQL role and ClickHouse user, made on the first start. */
export interface ServicePasswords {
  postgres: string;
  clickhouse: string;
}

function newPassword(): string {
  // base64url needs no escaping in a URL's user-info part.
  return randomBytes(18).toString('base64url');
}

/** Reads `<dataDir>/service-passwords.json` (mode 0600), creating it on the first start. */
export function servicePasswords(dataDir: string): ServicePasswords {
  const file = path.join(dataDir, 'service-passwords.json');
  if (fs.existsSync(file)) {
    const stored = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<ServicePasswords>;
    if (typeof stored.postgres === 'string' && typeof stored.clickhouse === 'string') {
      return { postgres: stored.postgres, clickhouse: stored.clickhouse };
    }
    throw new Error(`${file} is damaged: it needs string fields postgres and clickhouse`);
  }
  const created: ServicePasswords = { postgres: newPassword(), clickhouse: newPassword() };
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(file, JSON.stringify(created, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
  return created;
}
