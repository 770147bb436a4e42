import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { requestToken, TokenEndpointError } from '../../integrations/oauth/token-client';

/** A token endpoint that answers whatever the current test says, and can hang. */
let answer: { status: number; body: string } | 'hang' = { status: 200, body: '{}' };
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    if (answer === 'hang') return;
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
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
