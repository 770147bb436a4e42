import { createHmac } from 'node:crypto';
import { AsyncRequestError, agentQuery, asyncRequestUsageTick, parseCallbackUrl, type AgentRequestKey } from '../../../../domain/agents/async-requests';
import { meterEventId, tickEvent } from '../../../../domain/billing/metering';
import { CALLBACK_SIGNATURE_HEADER, CALLBACK_TIMESTAMP_HEADER, newCallbackSecret, signCallback, verifyCallback } from '../../../../domain/callback-signature';

const key: AgentRequestKey = { id: '8f0c1a52-1111-4222-8333-944455556666', accountId: 'acc', workspace: 'ws', workspaceId: 'ws-id', agentId: 'agent-uuid', agentName: 'echo' };

describe('callback signatures', () => {
  const secret = newCallbackSecret();
  const body = JSON.stringify({ id: key.id, status: 'succeeded' });

  test('HMAC-SHA256 over "<timestamp>.<body>", hex, as a receiver computes it by hand', () => {
    const headers = signCallback(secret, body, 1_770_000_000);
    expect(headers[CALLBACK_TIMESTAMP_HEADER]).toBe('1770000000');
    const expected = createHmac('sha256', secret).update(`1770000000.${body}`).digest('hex');
    expect(headers[CALLBACK_SIGNATURE_HEADER]).toBe(`v1=${expected}`);
  });

  test('verification accepts the signed body and refuses any change, another secret, or an old timestamp', () => {
    const now = 1_770_000_000_000;
    const headers = signCallback(secret, body, now / 1000);
    expect(verifyCallback(secret, headers, body, 300, now)).toBe(true);
    expect(verifyCallback(secret, headers, body.replace('succeeded', 'failed'), 300, now)).toBe(false);
    expect(verifyCallback(newCallbackSecret(), headers, body, 300, now)).toBe(false);
    expect(verifyCallback(secret, { ...headers, [CALLBACK_TIMESTAMP_HEADER]: String(now / 1000 + 1) }, body, 300, now)).toBe(false);
    expect(verifyCallback(secret, headers, body, 300, now + 301_000)).toBe(false);
    expect(verifyCallback(secret, {}, body, 300, now)).toBe(false);
  });

  test('secrets are random and say what they are', () => {
    expect(newCallbackSecret()).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(newCallbackSecret()).not.toBe(newCallbackSecret());
  });
});

describe('the callback URL header', () => {
  test('absent is no callback; http and https URLs are kept', () => {
    expect(parseCallbackUrl(undefined)).toBeUndefined();
    expect(parseCallbackUrl('https://hooks.example.com/agent?token=abc')).toBe('https://hooks.example.com/agent?token=abc');
    expect(parseCallbackUrl('http://127.0.0.1:9000/x')).toBe('http://127.0.0.1:9000/x');
  });

  test.each([
    ['not a url', /must be an absolute http or https URL/],
    ['/relative/path', /must be an absolute http or https URL/],
    ['file:///etc/passwd', /must use http or https, not file/],
    ['ftp://example.com/x', /must use http or https, not ftp/],
    ['https://user:pw@example.com/x', /must not carry credentials/],
    [`https://example.com/${'a'.repeat(2100)}`, /longer than 2048 characters/],
  ])('%s is refused, naming the header', (value, reason) => {
    expect(() => parseCallbackUrl(value)).toThrow(AsyncRequestError);
    expect(() => parseCallbackUrl(value)).toThrow(/^header X-Service-Callback-Url /);
    expect(() => parseCallbackUrl(value)).toThrow(reason);
  });

  test('given twice is refused', () => {
    expect(() => parseCallbackUrl(['http://a.example/', 'http://b.example/'])).toThrow(/must be given once/);
  });
});

test("the agent's query string is the caller's without async", () => {
  expect(agentQuery('/ws/agents/echo?async=true')).toBe('');
  expect(agentQuery('/ws/agents/echo?async=true&lang=en&x=1')).toBe('?lang=en&x=1');
  expect(agentQuery('/ws/agents/echo')).toBe('');
});

describe('metering', () => {
  test('one count per request, with an id from the request: the same request always, another request never', () => {
    const tick = asyncRequestUsageTick(key, Date.UTC(2026, 3, 16, 10));
    expect(tickEvent(tick)).toMatchObject({ resourceType: 'agent', resourceName: 'echo', resourceUuid: 'agent-uuid', billingDimension: 'agent_async_requests_count', quantity: 1 });
    expect(meterEventId(asyncRequestUsageTick(key, Date.UTC(2026, 3, 16, 10)))).toBe(meterEventId(tick));
    // Two requests accepted in the same millisecond are two events.
    expect(meterEventId(asyncRequestUsageTick({ ...key, id: '00000000-1111-4222-8333-944455556666' }, Date.UTC(2026, 3, 16, 10)))).not.toBe(meterEventId(tick));
  });

  test('ticks without an occurrence keep the ids they always had', () => {
    const { occurrence: _occurrence, ...periodTick } = asyncRequestUsageTick(key, Date.UTC(2026, 3, 16, 10));
    // The id of a period tick is a digest of workspace, type, resource, dimension and period start, nothing more.
    expect(meterEventId(periodTick)).toBe('meter-16fcabbfbc85be5e5f7eb879f28749692ff0dd56');
  });
});
