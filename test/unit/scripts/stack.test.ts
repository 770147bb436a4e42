import path from 'node:path';
import { clickhouseServerConfig, clickhouseUsersConfig } from '../../../scripts/stack/clickhouse-config';
import { clickhouseTarget, maskPassword } from '../../../scripts/stack/urls';
import { restartDelayMs } from '../../../scripts/restart-policy';
import { CHILD_RESTART_POLICY } from '../../../scripts/supervised-child';
import { onlyUnitTestsSelected, type JestSelection } from '../../setup/selection';
import { TEST_PORTS, testConfig } from '../../setup/test-config';

describe('maskPassword', () => {
  test('hides the password and keeps the rest', () => {
    expect(maskPassword('postgres://hangar:pa55@127.0.0.1:55432/hangar')).toBe('postgres://hangar:***@127.0.0.1:55432/hangar');
    expect(maskPassword('http://hangar:pa55@127.0.0.1:18123/')).toBe('http://hangar:***@127.0.0.1:18123/');
  });
  test('leaves a URL without password alone', () => {
    expect(maskPassword('http://127.0.0.1:18123/')).toBe('http://127.0.0.1:18123/');
  });
  test('prints nothing of a text it cannot parse, which might hold a secret', () => {
    expect(maskPassword('hangar:pa55 at somewhere')).toBe('(unparsable URL)');
  });
});

describe('clickhouseTarget', () => {
  test('takes the database from the path, then the database parameter, then the default', () => {
    expect(clickhouseTarget('http://u:p@h:8123/events', 'hangar').database).toBe('events');
    expect(clickhouseTarget('http://u:p@h:8123/?database=metrics', 'hangar').database).toBe('metrics');
    expect(clickhouseTarget('http://u:p@h:8123/', 'hangar').database).toBe('hangar');
  });
  test('splits off credentials (decoded) and drops path and parameters from the server URL', () => {
    expect(clickhouseTarget('https://us%40r:p%2Fw@ch.example:8443/db?database=x', 'hangar')).toEqual({
      serverUrl: 'https://ch.example:8443/',
      username: 'us@r',
      password: 'p/w',
      database: 'db',
    });
  });
  test('defaults the user to default, as the client does', () => {
    expect(clickhouseTarget('http://h:8123', 'hangar').username).toBe('default');
  });
  test('rejects a database name that is not a plain identifier (it is spliced into CREATE DATABASE)', () => {
    expect(() => clickhouseTarget('http://h:8123/a;DROP', 'hangar')).toThrow(/database 'a;DROP'/);
    expect(() => clickhouseTarget('http://h:8123/', 'bad-name')).toThrow(/letters, digits and '_'/);
  });
  test('rejects a protocol other than http(s)', () => {
    expect(() => clickhouseTarget('tcp://h:9000/', 'hangar')).toThrow(/CLICKHOUSE_URL must be http/);
  });
});

describe('ClickHouse configuration', () => {
  const layout = { dir: '/data/a&b', httpPort: 18124, tcpPort: 19001 };
  test('listens on the loopback on the configured ports, keeps every path in its folder, in UTC', () => {
    const xml = clickhouseServerConfig(layout);
    expect(xml).toContain('<listen_host>127.0.0.1</listen_host>');
    expect(xml).toContain('<http_port>18124</http_port>');
    expect(xml).toContain('<tcp_port>19001</tcp_port>');
    expect(xml).not.toContain('interserver_http_port');
    expect(xml).toContain('<timezone>UTC</timezone>');
    const paths = [...xml.matchAll(/<(?:path|tmp_path|user_files_path|format_schema_path|log|errorlog)>([^<]+)</g)].map((m) => m[1]);
    expect(paths).toHaveLength(6);
    for (const p of paths) expect(p.startsWith('/data/a&amp;b/')).toBe(true);
  });
  test('the users file holds one loopback user with the password hash, never the password', () => {
    const xml = clickhouseUsersConfig('s3cret');
    expect(xml).not.toContain('s3cret');
    // sha256("s3cret")
    expect(xml).toContain('<password_sha256_hex>1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0</password_sha256_hex>');
    expect(xml).toContain('<hangar>');
    expect(xml).not.toMatch(/<default>\s*<password/);
    expect(xml).toContain('<ip>127.0.0.1</ip>');
  });
});

describe('the restart delay of platform processes', () => {
  test('doubles from 1 s and stops at 30 s', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 20].map((n) => restartDelayMs(CHILD_RESTART_POLICY, n))).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  });
});

describe('onlyUnitTestsSelected', () => {
  const rootDir = '/repo';
  const files = ['/repo/test/unit/a.test.ts', '/repo/test/unit/b.test.ts', '/repo/test/integration/c.test.ts'];
  const selecting = (pattern?: string, extra: Partial<JestSelection> = {}): JestSelection => ({
    rootDir,
    testPathPatterns: {
      isSet: () => pattern !== undefined,
      toExecutor: () => ({ isMatch: (file: string) => pattern !== undefined && new RegExp(pattern).test(file) }),
    },
    ...extra,
  });

  test('true when every selected file is under test/unit', () => {
    expect(onlyUnitTestsSelected(selecting('test/unit/a.test.ts'), files)).toBe(true);
    expect(onlyUnitTestsSelected(selecting('test/unit'), files)).toBe(true);
  });
  test('false for a run of everything, a mixed selection, or one matching nothing', () => {
    expect(onlyUnitTestsSelected(selecting(undefined), files)).toBe(false);
    expect(onlyUnitTestsSelected(selecting('\\.test\\.ts'), files)).toBe(false);
    expect(onlyUnitTestsSelected(selecting('c\\.test'), files)).toBe(false);
    expect(onlyUnitTestsSelected(selecting('nothing-matches'), files)).toBe(false);
  });
  test('false when jest picks the files itself (related or changed files, watch mode)', () => {
    expect(onlyUnitTestsSelected(selecting('test/unit', { onlyChanged: true }), files)).toBe(false);
    expect(onlyUnitTestsSelected(selecting('test/unit', { findRelatedTests: true }), files)).toBe(false);
    expect(onlyUnitTestsSelected(selecting('test/unit', { watch: true }), files)).toBe(false);
  });
  test('false when the jest config lacks the patterns API', () => {
    expect(onlyUnitTestsSelected({ rootDir }, files)).toBe(false);
  });
});

describe('testConfig', () => {
  test('uses the test ports and .data-test, ignoring the settings meant for npm start', () => {
    const config = testConfig({ DATABASE_URL: 'postgres://elsewhere/db', HANGAR_POSTGRES_PORT: '1', HANGAR_DATA_DIR: '/prod' });
    expect(config.postgresPort).toBe(TEST_PORTS.HANGAR_POSTGRES_PORT);
    expect(config.temporalPort).toBe(TEST_PORTS.HANGAR_TEMPORAL_PORT);
    expect(config.basePort).toBe(TEST_PORTS.HANGAR_BASE_PORT);
    expect(config.databaseUrl).toBeUndefined();
    expect(path.basename(config.dataDir)).toBe('.data-test');
  });
  test('shifts every port by HANGAR_TEST_PORT_OFFSET and takes external services from HANGAR_TEST_*', () => {
    const config = testConfig({ HANGAR_TEST_PORT_OFFSET: '10', HANGAR_TEST_TEMPORAL_ADDRESS: 'temporal:7233' });
    expect(config.clickhouseHttpPort).toBe(TEST_PORTS.HANGAR_CLICKHOUSE_HTTP_PORT + 10);
    expect(config.sandboxPort).toBe(TEST_PORTS.HANGAR_SANDBOX_PORT + 10);
    expect(config.temporalAddress).toBe('temporal:7233');
  });
  test('rejects a port offset that is not a non-negative integer', () => {
    expect(() => testConfig({ HANGAR_TEST_PORT_OFFSET: '-3' })).toThrow(/HANGAR_TEST_PORT_OFFSET/);
  });
});
