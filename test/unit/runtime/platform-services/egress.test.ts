import { NO_PLATFORM_EGRESS, egressDecision, providerEgress } from '../../../../runtime/platform-services/egress';

const allowed = providerEgress(['https://oauth2.example.com/token', 'https://mail.example.com', 'http://127.0.0.1:4000/userinfo']);

test("an integration's providers are a spec.network of their hosts, with their schemes and ports", () => {
  expect(allowed).toEqual({
    network: { allowedDomains: ['oauth2.example.com', 'mail.example.com', '127.0.0.1'] },
    endpoints: ['https:443', 'http:4000'],
  });
});

test.each([
  ['https://mail.example.com/gmail/v1/users/me/messages/send', true],
  ['https://MAIL.example.com./x', true], // the policy's names are canonical
  ['http://127.0.0.1:4000/userinfo', true],
  ['http://mail.example.com/', false], // another scheme
  ['https://mail.example.com:8443/', false], // another port
  ['https://mail.example.com.evil.test/', false],
  ['https://sub.mail.example.com/', false], // a domain entry is that name alone
  ['https://user:pw@mail.example.com/', false],
  ['http://127.0.0.1:4001/', false],
  ['http://127.0.0.2:4000/', false],
  ['file:///etc/passwd', false],
  ['/v1/threads', false],
  ['not a url', false],
])('%s allowed: %s', (target, ok) => {
  const decision = egressDecision(target, allowed);
  expect('url' in decision).toBe(ok);
  if (!ok) expect((decision as { denied: string }).denied).toBeTruthy();
});

test('a workload without providers reaches nothing through its platform socket, and the refusal names the rule', () => {
  expect(egressDecision('https://mail.example.com/', NO_PLATFORM_EGRESS)).toEqual({
    denied: "https://mail.example.com is not in this workload's egress allow-list (spec.network.internet is false)",
  });
  expect(egressDecision('https://other.example.com/', allowed)).toEqual({
    denied: "https://other.example.com is not in this workload's egress allow-list (not in spec.network.allowedDomains)",
  });
});
