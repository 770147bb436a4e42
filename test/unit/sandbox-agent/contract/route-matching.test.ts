import fc from 'fast-check';
import { AGENT_ROUTES, isListedPath, matchRoute, routePath } from '../../../../sandbox-agent/contract/routes';

// The agent dispatches every request through the contract's table: a path and a method find one
// operation, with its placeholders; a listed path with another method is a 405, any other a 404.

const operationOf = (method: string, path: string) => {
  const match = matchRoute(method, path);
  return typeof match === 'object' ? match.route.operation : match;
};

test('each route of the table, its placeholders filled, is matched to itself', () => {
  const segment = fc.stringMatching(/^[A-Za-z0-9_.-]{1,12}$/).filter((s) => s !== '.' && s !== '..');
  const routes = AGENT_ROUTES.filter((route) => route.method !== '*');
  fc.assert(
    fc.property(fc.constantFrom(...routes), fc.array(segment, { minLength: 1, maxLength: 4 }), segment, (route, pathSegments, value) => {
      // A file path under /filesystem that starts with "tree" is the tree's, as the table says.
      fc.pre(!(route.path === '/filesystem/{path}' && pathSegments[0] === 'tree'));
      const path = route.path.replace('{path}', pathSegments.join('/')).replace(/\{\w+\}/g, value);
      const match = matchRoute(route.method, path);
      expect(typeof match === 'object' && match.route).toBe(route);
      if (typeof match === 'object' && route.path.includes('{path}')) expect(match.params.path).toBe(pathSegments.join('/'));
    }),
    { numRuns: 1_000 },
  );
});

test('the most literal pattern owns a path: /filesystem/tree/... is the tree, whatever the method', () => {
  expect(operationOf('GET', '/filesystem/tree/home/user')).toBe('fileTree');
  expect(operationOf('GET', '/filesystem/tree')).toBe('fileTree');
  expect(operationOf('PUT', '/filesystem/tree/home/user')).toBe('writeTree');
  expect(operationOf('DELETE', '/filesystem/tree/home/user')).toBe('deleteTree');
  expect(operationOf('POST', '/filesystem/tree/home/user')).toBe('method-not-allowed');
  expect(operationOf('POST', '/filesystem-multipart/initiate/home/user/big.bin')).toBe('initiateMultipartUpload');
  expect(operationOf('PUT', '/filesystem-multipart/0b7f2a8e-1c3d-4e5f-8a9b-0c1d2e3f4a5b/part')).toBe('uploadMultipartPart');
  expect(operationOf('GET', '/filesystem/treehouse/a')).toBe('readFile');
  expect(operationOf('HEAD', '/filesystem/a')).toBe('readFile');
  expect(operationOf('POST', '/process/web/kill')).toBe('killProcess');
  expect(operationOf('DELETE', '/process/web/kill')).toBe('killProcessByDelete');
  expect(operationOf('DELETE', '/process/web')).toBe('stopProcess');
  expect(operationOf('PATCH', '/mcp')).toBe('mcp');
});

test('a path the table lists answers 405 for a method it lacks; any other path 404, as isListedPath says', () => {
  for (const [method, path] of [['PUT', '/process'], ['POST', '/'], ['GET', '/network/forward'], ['PATCH', '/filesystem/a'], ['POST', '/network/process/1/ports']]) {
    expect([method, path, operationOf(method, path)]).toEqual([method, path, 'method-not-allowed']);
  }
  const anyPath = fc.array(fc.constantFrom('', 'process', 'filesystem', 'tree', 'network', 'internal', 'mcp', 'x', '1', '%2F'), { maxLength: 5 }).map((s) => `/${s.join('/')}`);
  fc.assert(
    fc.property(anyPath, fc.constantFrom('GET', 'POST', 'DELETE'), (path, method) => {
      expect(matchRoute(method, path) !== undefined).toBe(isListedPath(path));
    }),
    { numRuns: 2_000 },
  );
});

test('routePath fills an operation\'s placeholders, each one path segment however spelt', () => {
  expect(routePath('getProcess', { process: 'web' })).toBe('/process/web');
  expect(routePath('getProcess', { process: 'a/../b' })).toBe('/process/a%2F..%2Fb');
  expect(routePath('processPorts', { pid: 42 })).toBe('/network/process/42/ports');
  expect(() => routePath('killProcess')).toThrow('killProcess: no value for {process}');
});

test('HEAD on every GET path of the table takes the GET route; never a 405', () => {
  for (const route of AGENT_ROUTES.filter((r) => r.method === 'GET')) {
    const path = route.path.replace('{path}', 'tmp/a').replace(/\{\w+\}/g, '7');
    expect([path, operationOf('HEAD', path)]).toEqual([path, route.operation]);
  }
  // A path served without GET has no HEAD either.
  expect(operationOf('HEAD', '/network/process/1/monitor')).toBe('method-not-allowed');
});
