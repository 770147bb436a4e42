import fc from 'fast-check';
import { AGENT_ROUTES, isListedPath, reachesInternalRoute } from '../../../../sandbox-agent/contract/routes';
import { pathVariant } from '../../../helpers/path-variants';

const internal = AGENT_ROUTES.filter((route) => route.access === 'internal');
const publicRoutes = AGENT_ROUTES.filter((route) => route.access === 'public');

test('the table has both kinds, and the internal routes the host calls', () => {
  expect(internal.map((route) => `${route.method} ${route.path}`)).toEqual(
    expect.arrayContaining(['GET /internal/activity', 'POST /internal/reload', 'POST /network/forward']),
  );
  expect(publicRoutes.length).toBeGreaterThan(10);
});

test('internal routes, as written and under them, are recognised', () => {
  for (const route of internal) {
    expect(reachesInternalRoute(route.path)).toBe(true);
    expect(reachesInternalRoute(`${route.path}/more`)).toBe(true);
    expect(reachesInternalRoute(`${route.path}?x=1`)).toBe(true);
  }
});

test('any spelling of an internal route is recognised', () => {
  fc.assert(
    fc.property(fc.constantFrom(...internal).chain((route) => pathVariant(route.path)), (variant) => {
      expect(reachesInternalRoute(variant)).toBe(true);
    }),
    { numRuns: 2_000 },
  );
});

// Placeholders filled with names and paths a caller may really use, `internal` among them.
const segment = fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{1,12}$/), fc.constantFrom('internal', 'forward', 'activity', 'reload', 'network'));
const filled = (path: string) =>
  fc
    .tuple(...[...path.matchAll(/\{(\w+)\}/g)].map(([, name]) => (name === 'path' ? fc.array(segment, { minLength: 1, maxLength: 4 }).map((s) => s.join('/')) : segment)))
    .map((values) => {
      let i = 0;
      return path.replace(/\{\w+\}/g, () => values[i++]);
    });

test('no public route is taken for an internal one, whatever its file path, process name or query', () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...publicRoutes).chain((route) => filled(route.path)),
      fc.constantFrom('', '?recursive=true', '?path=/internal/activity'),
      (path, query) => {
        expect(reachesInternalRoute(`${path}${query}`)).toBe(false);
      },
    ),
    { numRuns: 2_000 },
  );
});

test('the agent serves the paths of the table, a trailing slash allowed, and nothing else', () => {
  for (const path of ['/', '/health', '/mcp', '/mcp/', '/filesystem', '/filesystem/workspace/a/b.txt', '/filesystem/tree/home/user', '/process', '/process/',
    '/process/web', '/process/12/logs/stream', '/network/process/12/monitor', '/network/forward', '/internal/activity', '/internal/reload']) {
    expect([path, isListedPath(path)]).toEqual([path, true]);
  }
  for (const path of ['/nope', '//', '//internal/activity', '/./health', '/internal', '/internal/activity/x', '/INTERNAL/activity', '/health/x',
    '/process/web/logs/x', '/network/process/12', '/network', '/mcp/x']) {
    expect([path, isListedPath(path)]).toEqual([path, false]);
  }
});
