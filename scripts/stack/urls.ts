/** The URL with its password replaced by '***', for logs and the start summary. */
export function maskPassword(url: string): string {
  try {
    // Without '://' any 'word:' is a scheme and the rest, secret or not, a path.
    if (!url.includes('://')) throw new Error('not a URL with an authority');
    const parsed = new URL(url);
    if (!parsed.password) return url;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    // Not a URL we can parse: show nothing of it rather than risk printing a secret.
    return '(unparsable URL)';
  }
}

/** Where a ClickHouse URL points: the bare server URL, the credentials and the database. */
export interface ClickHouseTarget {
  serverUrl: string;
  username: string;
  password: string;
  database: string;
}

/**
 * Splits a ClickHouse URL as @clickhouse/client reads it: the path or a `database` parameter names
 * the database. Administrative statements (CREATE DATABASE) must run without it, since the
 * database may not exist yet.
 */
export function clickhouseTarget(url: string, defaultDatabase: string): ClickHouseTarget {
  const parsed = new URL(url);
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new Error(`CLICKHOUSE_URL must be http(s)://user:password@host:port/, got protocol ${parsed.protocol}`);
  }
  const fromPath = decodeURIComponent(parsed.pathname.replace(/^\/+|\/+$/g, ''));
  const database = fromPath || parsed.searchParams.get('database') || defaultDatabase;
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(database)) {
    throw new Error(`CLICKHOUSE_URL names database '${database}': use letters, digits and '_' only`);
  }
  const username = decodeURIComponent(parsed.username) || 'default';
  const password = decodeURIComponent(parsed.password);
  const server = new URL(parsed.origin);
  return { serverUrl: server.toString(), username, password, database };
}
