import { describeNetworkFailure } from '../../../domain/network-failure';

const failure = (code: string | undefined, message = 'socket error') => Object.assign(new Error(message), code ? { code } : {});

test.each([
  ['ECONNREFUSED', 'connection_refused', 'connection refused by mail.example:443 (ECONNREFUSED)'],
  ['ENOTFOUND', 'dns_failed', 'the host name of mail.example:443 did not resolve (ENOTFOUND)'],
  ['EAI_AGAIN', 'dns_failed', 'the host name of mail.example:443 did not resolve (EAI_AGAIN)'],
  ['EHOSTUNREACH', 'unreachable', 'mail.example:443 is unreachable (EHOSTUNREACH)'],
  ['ETIMEDOUT', 'unreachable', 'mail.example:443 is unreachable (ETIMEDOUT)'],
  ['ECONNRESET', 'connection_closed', 'mail.example:443 closed the connection before answering (ECONNRESET)'],
  ['DEPTH_ZERO_SELF_SIGNED_CERT', 'tls_failed', 'the TLS handshake with mail.example:443 failed: socket error'],
  ['ERR_TLS_CERT_ALTNAME_INVALID', 'tls_failed', 'the TLS handshake with mail.example:443 failed: socket error'],
  ['EWHATEVER', 'network_failed', 'the connection to mail.example:443 failed: socket error'],
  [undefined, 'network_failed', 'the connection to mail.example:443 failed: socket error'],
])('%s is %s', (code, expected, reason) => {
  expect(describeNetworkFailure(failure(code), 'mail.example:443')).toEqual({ code: expected, reason });
});
