import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CommandError } from './errors';

/** Where and as whom the CLI calls the API. */
export interface Credentials {
  url: string;
  apiKey: string;
  workspace: string;
}

export function configDir(env: NodeJS.ProcessEnv): string {
  return env.HANGAR_CONFIG_DIR || path.join(env.HOME || os.homedir(), '.config', 'hangar');
}

export function credentialsFile(env: NodeJS.ProcessEnv): string {
  return path.join(configDir(env), 'credentials.json');
}

/**
 * Writes the credentials readable by their owner only: the file is created 0600 (and chmod'ed
 * in case it existed with a wider mode) before the key goes into it.
 */
export function saveCredentials(env: NodeJS.ProcessEnv, credentials: Credentials): string {
  const file = credentialsFile(env);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const fd = fs.openSync(file, 'w', 0o600);
  try {
    fs.fchmodSync(fd, 0o600);
    fs.writeSync(fd, `${JSON.stringify(credentials, null, 2)}\n`);
  } finally {
    fs.closeSync(fd);
  }
  return file;
}

const NOT_LOGGED_IN = 'not logged in: run hangar login --url <base_url> --api-key <key> [--workspace <name>] (or set HANGAR_URL and HANGAR_API_KEY)';

/** The stored credentials, each field overridden by HANGAR_URL / HANGAR_API_KEY / HANGAR_WORKSPACE. */
export function loadCredentials(env: NodeJS.ProcessEnv): Credentials {
  let stored: Partial<Credentials> = {};
  const file = credentialsFile(env);
  if (fs.existsSync(file)) {
    try {
      stored = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<Credentials>;
    } catch {
      throw new CommandError(`${file} is not valid JSON: run hangar login again`);
    }
  }
  const url = env.HANGAR_URL || stored.url;
  const apiKey = env.HANGAR_API_KEY || stored.apiKey;
  if (!url || !apiKey) throw new CommandError(NOT_LOGGED_IN);
  return { url: url.replace(/\/+$/, ''), apiKey, workspace: env.HANGAR_WORKSPACE || stored.workspace || 'default' };
}
