import fs from 'node:fs';
import http, { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { EGRESS_FAILURE_HEADER } from '../../../domain/network-failure';
import { PLATFORM_SOCKET_ENV } from '../../../domain/workloads/platform-credential';
import { requestToken, TokenEndpointError } from '../../../integrations/oauth/token-client';
import { forwardEgress, providerEgress } from '../../../runtime/platform-services/egress';

/** A token endpoint that answers whatever the current test says, and can hang. */
let answer: { status: number; body: string; headers?: Record<string, string> } | 'hang' = { status: 200, body: '{}' };
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    if (answer === 'hang') return;
    res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const CODE = 'code-4f1b9a7e2c';
const SECRET = 'client-secret-77aa91';

/**
 * The error of a token request. The timeout is long unless a test is about it: on a busy machine
 * an answering endpoint may take a while, and that must not read as a hang.
 */
async function failure(timeoutMs = 15_000): Promise<TokenEndpointError> {
  const outcome = await requestToken(url, { grant_type: 'authorization_code', code: CODE, client_secret: SECRET }, { secrets: [CODE, SECRET], timeoutMs }).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(outcome).toBeInstanceOf(TokenEndpointError);
  return outcome as TokenEndpointError;
}

test.each([
  [503, true],
  [500, true],
  [429, true],
  [400, false],
  [401, false],
])('a %i answer is transient: %s', async (status, transient) => {
  answer = { status, body: JSON.stringify({ error: 'some_error' }) };
  const err = await failure();
  expect(err).toEqual(expect.objectContaining({ status, transient, oauthError: 'some_error' }));
});

test('a provider that does not answer in time is a transient failure', async () => {
  answer = 'hang';
  // It never answers: however short, the timeout cannot race an answer.
  const err = await failure(300);
  expect(err.transient).toBe(true);
  expect(err.message).toMatch(/timed out/);
});

test('secrets echoed by the provider are redacted from the error', async () => {
  answer = { status: 400, body: JSON.stringify({ error: 'invalid_grant', error_description: `code ${CODE} with secret ${SECRET} is not valid` }) };
  const err = await failure();
  expect(err.message).toBe('the token endpoint answered 400 invalid_grant: code [redacted] with secret [redacted] is not valid');
});

test('a 200 without an access token, or not JSON, is a failure to retry', async () => {
  answer = { status: 200, body: '<html>proxy</html>' };
  expect((await failure()).transient).toBe(true);
});

describe('a token endpoint that cannot be reached', () => {
  /** A port nothing listens on: bound, noted and closed again. */
  async function closedPort(): Promise<number> {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    return port;
  }

  const refused = async () => `http://127.0.0.1:${await closedPort()}/token`;
  const UNRESOLVABLE = 'http://no-such-provider.invalid/token';

  const failureAt = async (tokenUrl: string) =>
    (await requestToken(tokenUrl, { grant_type: 'refresh_token', refresh_token: CODE, client_secret: SECRET }, { secrets: [CODE, SECRET] }).then(
      () => undefined,
      (err: unknown) => err,
    )) as TokenEndpointError;

  test('from the host, the error names the URL and what failed', async () => {
    const tokenUrl = await refused();
    const err = await failureAt(tokenUrl);
    expect(err).toBeInstanceOf(TokenEndpointError);
    expect(err.transient).toBe(true);
    expect(err.message).toBe(`the token request failed: could not reach ${tokenUrl}: connection refused by ${new URL(tokenUrl).host} (ECONNREFUSED)`);
    expect((await failureAt(UNRESOLVABLE)).message).toMatch(/^the token request failed: could not reach http:\/\/no-such-provider\.invalid\/token: the host name of no-such-provider\.invalid did not resolve \(E[A-Z_]+\)$/);
  });

  describe("from a workload, through the node's egress", () => {
    let egress: Server;
    let socketPath: string;
    let allowed: string[];
    const previousSocket = process.env[PLATFORM_SOCKET_ENV];

    beforeAll(async () => {
      allowed = [new URL(await refused()).origin, new URL(UNRESOLVABLE).origin, new URL(url).origin];
      socketPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hangar-egress-')), 'platform.sock');
      const providers = providerEgress(allowed);
      egress = createServer((req, res) => forwardEgress(req, res, providers));
      await new Promise<void>((resolve) => egress.listen(socketPath, resolve));
      process.env[PLATFORM_SOCKET_ENV] = socketPath;
    });
    afterAll(async () => {
      if (previousSocket === undefined) delete process.env[PLATFORM_SOCKET_ENV];
      else process.env[PLATFORM_SOCKET_ENV] = previousSocket;
      egress.closeAllConnections();
      await new Promise((resolve) => egress.close(resolve));
      fs.rmSync(path.dirname(socketPath), { recursive: true, force: true });
    });

    test('the egress answers 502 with a code and a message saying where and why', async () => {
      const tokenUrl = `${allowed[0]}/token?client_secret=${SECRET}`;
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        http
          .request({ socketPath, method: 'POST', path: tokenUrl, headers: { host: new URL(tokenUrl).host } }, (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
          })
          .on('error', reject)
          .end('grant_type=refresh_token');
      });
      expect(answer.status).toBe(502);
      expect(JSON.parse(answer.body)).toEqual({
        error: 'egress_connection_refused',
        message: `could not reach ${allowed[0]}/token: connection refused by ${new URL(allowed[0]).host} (ECONNREFUSED)`,
      });
      expect(answer.body).not.toContain(SECRET);
    });

    test('the token client reports the egress failure as such, not as the provider answering 502', async () => {
      const err = await failureAt(`${allowed[0]}/token`);
      expect(err.transient).toBe(true);
      expect(err.status).toBeUndefined();
      expect(err.message).toBe(`the token request failed: could not reach ${allowed[0]}/token: connection refused by ${new URL(allowed[0]).host} (ECONNREFUSED)`);
      expect((await failureAt(UNRESOLVABLE)).message).toMatch(/could not reach http:\/\/no-such-provider\.invalid\/token: the host name of no-such-provider\.invalid did not resolve/);
    });

    test("a provider's own 502 stays the provider's, even if it carries the egress's failure marker", async () => {
      answer = { status: 502, body: JSON.stringify({ error: 'bad_gateway' }), headers: { [EGRESS_FAILURE_HEADER]: 'connection_refused' } };
      const err = await failureAt(url);
      expect(err).toEqual(expect.objectContaining({ status: 502, transient: true, oauthError: 'bad_gateway' }));
      expect(err.message).toBe('the token endpoint answered 502 bad_gateway');
    });
  });
});
