import { findIntegration } from '../../../../domain/integrations/catalog';
import { buildMimeMessage, emailProblem, encodeHeaderText } from '../../../../domain/integrations/email-message';
import { functionSpecProblem } from '../../../../domain/integrations/function-binding';
import { provisioningWorkflowId, tenantNameProblem, tenantResourceName } from '../../../../domain/integrations/provisioning';
import { maskSecret, mergeSecretUpdate, redactSecrets, secretsProblem } from '../../../../domain/integrations/secrets';

const email = findIntegration('email')!;

describe('secrets', () => {
  test('masks never show short values and show only the last four characters of long ones', () => {
    expect(maskSecret('short-secret')).toBe('********');
    expect(maskSecret('a-long-client-secret-ABCD')).toBe('********ABCD');
  });

  test('the first missing required secret is named, then unknown keys', () => {
    expect(secretsProblem(email, { CLIENT_ID: 'a', CLIENT_SECRET: 'b', REFRESH_TOKEN: 'c' })).toBeUndefined();
    expect(secretsProblem(email, { CLIENT_ID: 'a', REFRESH_TOKEN: 'c' })).toBe("spec.secret.CLIENT_SECRET is required for integration 'email'");
    expect(secretsProblem(email, { CLIENT_ID: 'a', CLIENT_SECRET: 'b', REFRESH_TOKEN: 'c', TOKEN: 'd' })).toMatch(/^spec\.secret\.TOKEN is not a secret/);
  });

  test('an update keeps a secret sent back as its mask and replaces everything else', () => {
    const stored = { CLIENT_ID: 'client-id-0123456789', CLIENT_SECRET: 'client-secret-0123456789', REFRESH_TOKEN: 'short' };
    const update = { CLIENT_ID: maskSecret(stored.CLIENT_ID), CLIENT_SECRET: 'new-secret', REFRESH_TOKEN: maskSecret(stored.REFRESH_TOKEN) };
    expect(mergeSecretUpdate(stored, update)).toEqual({ CLIENT_ID: stored.CLIENT_ID, CLIENT_SECRET: 'new-secret', REFRESH_TOKEN: 'short' });
    // The mask of another value is not this secret's mask: it is taken as the new value.
    expect(mergeSecretUpdate(stored, { CLIENT_ID: '********WXYZ' })).toEqual({ CLIENT_ID: '********WXYZ' });
  });

  test('redaction replaces every occurrence of each secret', () => {
    expect(redactSecrets('code abcd1234 used twice: abcd1234, key xyz', ['abcd1234', 'xyz'])).toBe('code [redacted] used twice: [redacted], key xyz');
  });
});

describe('function specs', () => {
  const mcp = { type: 'mcp', runtime: { type: 'mcp' } };
  test.each([
    [{}, undefined],
    [{ ...mcp, integrationConnections: ['a', 'b'] }, undefined],
    [{ type: 'http' }, "spec.type must be 'mcp'"],
    [{ runtime: { type: 'http' } }, "spec.runtime.type must be 'mcp'"],
    [{ integrationConnections: ['a'], runtime: { type: 'mcp' } }, "spec.type is required (value 'mcp') when spec.integrationConnections is given"],
    [{ type: 'mcp', integrationConnections: ['a'] }, "spec.runtime.type is required (value 'mcp') when spec.integrationConnections is given"],
    [{ ...mcp, integrationConnections: ['a', 'b', 'a'] }, "spec.integrationConnections names 'a' twice"],
  ])('%j -> %s', (spec, problem) => {
    expect(functionSpecProblem(spec)).toBe(problem);
  });
});

describe('email messages', () => {
  test('a message is UTF-8 text in base64 with an encoded subject', () => {
    const mime = buildMimeMessage({ to: ['a@example.org', 'b@example.org'], cc: ['c@example.org'], subject: 'Grüße', text: 'Hallo ✓' });
    const [head, body] = mime.split('\r\n\r\n');
    expect(head.split('\r\n')).toEqual([
      'To: a@example.org, b@example.org',
      'Cc: c@example.org',
      `Subject: =?UTF-8?B?${Buffer.from('Grüße').toString('base64')}?=`,
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset="UTF-8"',
      'Content-Transfer-Encoding: base64',
    ]);
    expect(Buffer.from(body, 'base64').toString('utf8')).toBe('Hallo ✓');
    expect(encodeHeaderText('plain')).toBe('plain');
  });

  test('long bodies are wrapped at 76 characters', () => {
    const body = buildMimeMessage({ to: ['a@example.org'], subject: 's', text: 'x'.repeat(500) }).split('\r\n\r\n')[1];
    expect(body.trimEnd().split('\r\n').every((line) => line.length <= 76)).toBe(true);
  });

  test.each([
    [{ to: [], subject: 's', text: '' }, 'to needs at least one address'],
    [{ to: ['a@example.org'], bcc: ['no at sign'], subject: 's', text: '' }, "bcc: 'no at sign' is not an email address"],
    [{ to: ['a@example.org>, evil@example.org'], subject: 's', text: '' }, "to: 'a@example.org>, evil@example.org' is not an email address"],
    [{ to: ['a@example.org'], subject: 'x\nBcc: evil@example.org', text: '' }, 'subject must be one line'],
  ])('%j is refused', (message, problem) => {
    expect(emailProblem(message)).toBe(problem);
  });
});

describe('tenant naming', () => {
  test('a tenant key names its connection, function and workflow', () => {
    expect(tenantResourceName('email', 'user-42')).toBe('email-user-42');
    expect(provisioningWorkflowId('acme', 'email', 'user-42')).toBe('provision/acme/email/user-42');
    expect(tenantNameProblem('email', 'user-42')).toBeUndefined();
    expect(tenantNameProblem('email', '4'.repeat(40))).toBeUndefined();
  });

  test.each(['', '-lead', 'trail-', 'Upper', 'with_underscore', 'x'.repeat(41)])('%j is not a tenant key', (tenant) => {
    expect(tenantNameProblem('email', tenant)).toMatch(/^tenant must be/);
  });
});
