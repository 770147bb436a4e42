import { renderSandboxUrl, sandboxAddressMatcher } from '../../../../domain/sandbox/url-template';

describe('sandbox URL template', () => {
  test('variables are filled, missing ones become unknown', () => {
    const template = 'http://127.0.0.1:8082/{workspace_id}/{sandbox_id}';
    expect(renderSandboxUrl(template, { workspace_id: 'default', sandbox_id: 'box' })).toBe('http://127.0.0.1:8082/default/box');
    expect(renderSandboxUrl(template, {})).toBe('http://127.0.0.1:8082/unknown/unknown');
    expect(renderSandboxUrl('https://{sandbox_id}-{workspace_id}.{region}.example.com', { sandbox_id: 's' })).toBe(
      'https://s-unknown.unknown.example.com',
    );
  });

  test('path-based addresses are matched, the rest of the path goes to the sandbox API', () => {
    const m = sandboxAddressMatcher('http://127.0.0.1:8082/{workspace_id}/{sandbox_id}');
    expect(m.match('127.0.0.1:8082', '/default/box/filesystem/tree/tmp')).toEqual({
      values: { workspace_id: 'default', sandbox_id: 'box' },
      rest: '/filesystem/tree/tmp',
    });
    expect(m.match('127.0.0.1:8082', '/default/box')).toEqual({ values: { workspace_id: 'default', sandbox_id: 'box' }, rest: '/' });
    expect(m.match('127.0.0.1:8082', '/default')).toBeUndefined();
  });

  test('host-based addresses are matched with or without the port', () => {
    const m = sandboxAddressMatcher('http://{sandbox_id}--{workspace_id}.{region}.sandboxes.test:8082');
    expect(m.match('box--default.local.sandboxes.test:8082', '/process')).toEqual({
      values: { sandbox_id: 'box', workspace_id: 'default', region: 'local' },
      rest: '/process',
    });
    expect(m.match('box--default.local.sandboxes.test', '/')).toBeDefined();
    expect(m.match('evil.test', '/')).toBeUndefined();
  });
});
