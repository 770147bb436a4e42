import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../../../scripts/stack/binaries';
import { publicRoutes } from '../../../../sandbox-agent/contract/routes';

/** The README's route-by-route list of the sandbox API: the section's text up to the next heading. */
function routeSection(): string {
  const readme = fs.readFileSync(path.join(repoRoot(), 'README.md'), 'utf8');
  const start = readme.indexOf('### The sandbox API, route by route');
  expect(start).toBeGreaterThanOrEqual(0);
  const end = readme.indexOf('\n## ', start);
  return readme.slice(start, end < 0 ? undefined : end);
}

/** How the list spells a route: its method (`ANY` for any) and its path, in backquotes. */
const spelling = (method: string, routePath: string) => `\`${method === '*' ? 'ANY' : method} ${routePath}\``;

// HEAD is one rule for every GET route (no row of the table), said once in the section.
const listed = publicRoutes();

test.each(listed.map((route) => spelling(route.method, route.path)))('the README lists %s', (route) => {
  expect(routeSection()).toContain(route);
});

test('the README lists no sandbox API route the table lacks', () => {
  const known = new Set(listed.map((route) => spelling(route.method, route.path)));
  // `/port/{port}/...` is the gateway's own route, in front of the API.
  known.add('`ANY /port/{port}/...`');
  const named = routeSection().match(/`(?:GET|PUT|POST|DELETE|PATCH|ANY) \/[^`]*`/g) ?? [];
  const table = named.filter((name) => !/^`[A-Z]+ \/(codegen|drives|archive|network\/tunnel|environment|upgrade)/.test(name));
  expect(table.filter((name) => !known.has(name))).toEqual([]);
});
