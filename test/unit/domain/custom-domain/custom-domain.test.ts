import { customDomainUsageTicks, domainProblem, domainUpstreamPath, requestHost } from '../../../../domain/custom-domain/custom-domain';
import { meterEventId } from '../../../../domain/billing/metering';

const field = 'body.spec.domain';

test('lowercase DNS names of two or more labels are accepted', () => {
  for (const domain of ['api.example.com', 'a.b', 'x-1.example-2.co.uk', `${'a'.repeat(63)}.com`, 'xn--bcher-kva.example']) {
    expect(domainProblem(field, domain)).toBeUndefined();
  }
});

test.each([
  ['API.example.com', 'must be lowercase'],
  ['api.example.com:8080', 'must not carry a port'],
  ['api.example.com:', 'must not carry a port'],
  ['10.0.0.1', 'is an IP address'],
  ['::1', 'is an IP address'],
  ['[2001:db8::1]', 'is an IP address'],
  ['1.2.3', 'its last label is numeric'],
  ['localhost', 'at least two labels'],
  ['api.example.com.', 'must not end with a dot'],
  ['https://api.example.com', 'without scheme or path'],
  ['api.example.com/x', 'without scheme or path'],
  ['-api.example.com', 'is not a DNS name'],
  ['api..example.com', 'is not a DNS name'],
  ['api_x.example.com', 'is not a DNS name'],
  [`${'a'.repeat(64)}.com`, 'is not a DNS name'],
  [`${'a.'.repeat(127)}com`, 'at most 253 characters'],
])('%s is refused: %s, naming the field', (domain, reason) => {
  const problem = domainProblem(field, domain);
  expect(problem).toContain(reason);
  expect(problem).toMatch(/^body\.spec\.domain/);
});

test('the Host of a request is compared without its port and case', () => {
  expect(requestHost('API.Example.com:8443')).toBe('api.example.com');
  expect(requestHost('api.example.com')).toBe('api.example.com');
  expect(requestHost('[::1]:8081')).toBe('[::1]');
  expect(requestHost(undefined)).toBe('');
});

test('each target kind serves the paths its run_url route serves', () => {
  expect(domainUpstreamPath('agent', '/')).toBe('/');
  expect(domainUpstreamPath('agent', '/other')).toBeUndefined();
  expect(domainUpstreamPath('model', '/chat/completions')).toBe('/chat/completions');
  expect(domainUpstreamPath('model', '/')).toBe('/');
  expect(domainUpstreamPath('function', '/mcp')).toBe('/mcp');
  expect(domainUpstreamPath('function', '/mcp/x')).toBe('/mcp/x');
  expect(domainUpstreamPath('function', '/mcpx')).toBeUndefined();
  expect(domainUpstreamPath('function', '/')).toBeUndefined();
});

const key = { id: '0b7e7a3c-5a4b-4c8e-9c55-3f1f2f0d9e11', workspace: 'ws', workspaceId: 'w-1', name: 'www' };

test('a custom domain is metered in hours of existence, from the start of the period', () => {
  expect(customDomainUsageTicks({ key, accountId: 'acc', from: 3_600_000, to: 3_600_000 + 90 * 60_000 })).toEqual([
    {
      accountId: 'acc',
      workspace: 'ws',
      resourceType: 'custom_domain',
      resourceName: 'www',
      resourceUuid: key.id,
      billingDimension: 'custom_domain_active_time_hours',
      quantity: 1.5,
      periodStart: new Date(3_600_000),
    },
  ]);
});

test('an empty period records nothing; a retried period has the same quantity and event id', () => {
  expect(customDomainUsageTicks({ key, accountId: 'acc', from: 5_000, to: 5_000 })).toEqual([]);
  const once = customDomainUsageTicks({ key, accountId: 'acc', from: 0, to: 60_000 })[0];
  const again = customDomainUsageTicks({ key, accountId: 'acc', from: 0, to: 60_000 })[0];
  expect(once.quantity).toBe(0.016667);
  expect(again).toEqual(once);
  expect(meterEventId(again)).toBe(meterEventId(once));
  const next = customDomainUsageTicks({ key, accountId: 'acc', from: 60_000, to: 120_000 })[0];
  expect(meterEventId(next)).not.toBe(meterEventId(once));
});
