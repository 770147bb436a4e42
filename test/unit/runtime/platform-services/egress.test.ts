import { egressDecision, originsOf } from '../../../../runtime/platform-services/egress';

const allowed = originsOf(['https://oauth2.example.com/token', 'https://mail.example.com', 'http://127.0.0.1:4000/userinfo']);

test('allow-lists are origins: scheme, host and port', () => {
  expect(allowed).toEqual(['https://oauth2.example.com', 'https://mail.example.com', 'http://127.0.0.1:4000']);
});

test.each([
  ['https://mail.example.com/gmail/v1/users/me/messages/send', true],
  ['http://127.0.0.1:4000/userinfo', true],
  ['http://mail.example.com/', false], // another scheme
  ['https://mail.example.com:8443/', false], // another port
  ['https://mail.example.com.evil.test/', false],
  ['https://user:pw@mail.example.com/', false],
  ['http://127.0.0.1:4001/', false],
  ['file:///etc/passwd', false],
  ['/v1/threads', false],
  ['not a url', false],
])('%s allowed: %s', (target, ok) => {
  const decision = egressDecision(target, allowed);
  expect('url' in decision).toBe(ok);
  if (!ok) expect((decision as { denied: string }).denied).toBeTruthy();
});
