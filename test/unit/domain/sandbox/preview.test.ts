import { preflightHeaders, previewExpiresAt, previewLabel, previewSpecProblem, previewUrlTemplate } from '../../../../domain/sandbox/preview';
import { renderSandboxUrl, sandboxAddressMatcher } from '../../../../domain/sandbox/url-template';

describe('preview rules', () => {
  test('expiry: the absolute one, else ttl after creation, else none', () => {
    const created = new Date('2026-01-01T00:00:00Z');
    expect(previewExpiresAt({ expires: '2026-02-01T00:00:00Z' }, created)).toEqual(new Date('2026-02-01T00:00:00Z'));
    expect(previewExpiresAt({ ttl: '2h' }, created)).toEqual(new Date('2026-01-01T02:00:00Z'));
    expect(previewExpiresAt({}, created)).toBeUndefined();
  });

  test('problems name the field', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(previewSpecProblem({ port: 80, public: true, ttl: '1h', expires: '2027-01-01T00:00:00Z' }, now)).toMatch(/body\.spec\.ttl and body\.spec\.expires/);
    expect(previewSpecProblem({ port: 80, public: true, expires: '2025-01-01T00:00:00Z' }, now)).toMatch(/body\.spec\.expires .* in the past/);
    expect(previewSpecProblem({ port: 80, public: true, requestHeaders: { 'bad header': 'x' } }, now)).toMatch(/body\.spec\.requestHeaders: 'bad header'/);
    expect(previewSpecProblem({ port: 80, public: true, responseHeaders: { 'X-Ok': 'y' } }, now)).toBeUndefined();
    expect(previewSpecProblem({ port: 80, public: true, responseHeaders: { 'X-Bad': 'a\r\nSet-Cookie: x' } }, now)).toMatch(/body\.spec\.responseHeaders\.X-Bad/);
    expect(previewSpecProblem({ port: 443, public: true }, now)).toMatch(/body\.spec\.public: port 443 is the sandbox API/);
    expect(previewSpecProblem({ port: 443, public: false }, now)).toBeUndefined();
  });

  test('a prefix names the preview with its workspace; without one, the random label', () => {
    expect(previewLabel('myapp', 'acme', 'r4nd0m')).toBe('myapp-acme');
    expect(previewLabel(undefined, 'acme', 'r4nd0m')).toBe('r4nd0m');
  });

  test("a preflight's defaults give way to the preview's own response headers", () => {
    const headers = preflightHeaders({ 'Access-Control-Allow-Origin': 'https://app.example' });
    expect(headers['access-control-allow-origin']).toBe('https://app.example');
    expect(headers['access-control-allow-headers']).toMatch(/X-Service-Preview-Token/);
  });

  test('the preview template defaults to /_previews on the sandbox origin, and a host-based one matches by host', () => {
    expect(previewUrlTemplate({ sandboxUrlTemplate: 'http://127.0.0.1:8082/{workspace_id}/{sandbox_id}' })).toBe('http://127.0.0.1:8082/_previews/{preview_id}');
    const template = 'https://{preview_id}.preview.example.com';
    expect(previewUrlTemplate({ previewUrlTemplate: template, sandboxUrlTemplate: 'x' })).toBe(template);
    expect(renderSandboxUrl(template, { preview_id: 'abc' })).toBe('https://abc.preview.example.com');
    expect(sandboxAddressMatcher(template).match('abc.preview.example.com', '/x/y')).toEqual({ values: { preview_id: 'abc' }, rest: '/x/y' });
    expect(sandboxAddressMatcher('http://127.0.0.1:8082/_previews/{preview_id}').match('127.0.0.1:8082', '/acme/box/x')).toBeUndefined();
  });
});
