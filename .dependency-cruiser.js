/**
 * The floors of Hangar's code, as rules (README, "Architecture"). Every module imports only from
 * its own floor or the floors below it:
 *
 *   6  api/ workers/ cli/ scripts/          entry points: wire the floors below together
 *   5  workflows/                           deterministic orchestration
 *   4  activities/                          the side effects a workflow calls
 *   3  runtime/ sandbox-agent/              a node's isolation; the server inside each sandbox
 *      control-plane/ integrations/         operations routes and activities share; outbound clients
 *   2  store/                               data access: PostgreSQL, ClickHouse, migrations
 *   1  domain/                              pure logic
 *
 * `npm test` runs this before the suites (`npm run lint`); a wrong import fails with the rule's
 * name and the comment below it.
 */
const ENTRY = '^(api|workers|cli|scripts)/';
const WORKFLOWS = '^workflows/';
const ACTIVITIES = '^activities/';
const FLOOR_3 = '^(runtime|sandbox-agent|control-plane|integrations)/';
const STORE = '^store/';
const PRODUCT = '^(domain|store|runtime|sandbox-agent|control-plane|integrations|activities|workflows|api|workers|cli|scripts)/';

/** Everything at `floor` or above, as one pattern. */
const atOrAbove = (...patterns) => patterns.join('|');

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Modules that import each other cannot be understood, tested or moved apart. Pull what both need into a module below them.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'domain-is-pure',
      severity: 'error',
      comment: 'domain/ (floor 1) is pure logic: it imports nothing of the product above it.',
      from: { path: '^domain/' },
      to: { path: atOrAbove(STORE, FLOOR_3, ACTIVITIES, WORKFLOWS, ENTRY) },
    },
    {
      name: 'domain-has-no-io',
      severity: 'error',
      comment: 'domain/ (floor 1) does no I/O: no files, database, Temporal, HTTP or child process. Put the I/O in store/, runtime/ or an activity.',
      from: { path: '^domain/' },
      to: { path: '(^|/)node_modules/(pg|@clickhouse|@temporalio|fastify|@fastify)/|^(node:)?(fs|fs/promises|child_process|http|https|dgram)$' },
    },
    {
      name: 'store-only-reaches-down',
      severity: 'error',
      comment: 'store/ (floor 2) is data access: it may use domain/ and nothing above it.',
      from: { path: STORE },
      to: { path: atOrAbove(FLOOR_3, ACTIVITIES, WORKFLOWS, ENTRY) },
    },
    {
      name: 'store-knows-no-temporal',
      severity: 'error',
      comment: 'store/ reads and writes data; starting or signalling workflows belongs to control-plane/ or an entry point.',
      from: { path: STORE },
      to: { path: '(^|/)node_modules/@temporalio/' },
    },
    {
      name: 'floor-3-only-reaches-down',
      severity: 'error',
      comment: 'runtime/, sandbox-agent/, control-plane/ and integrations/ (floor 3) may use store/ and domain/, never activities, workflows or entry points. A node that must start a workflow is given a function for it by its worker.',
      from: { path: FLOOR_3 },
      to: { path: atOrAbove(ACTIVITIES, WORKFLOWS, ENTRY) },
    },
    {
      name: 'runtime-knows-no-orchestration',
      severity: 'error',
      comment: 'runtime/ isolates sandboxes on one node; it does not start workflows or use the control plane.',
      from: { path: '^runtime/' },
      to: { path: '^control-plane/|(^|/)node_modules/@temporalio/' },
    },
    {
      name: 'sandbox-agent-stands-alone',
      severity: 'error',
      comment: 'The sandbox agent runs inside each sandbox with only its own folder mounted: it imports nothing of the product outside sandbox-agent/.',
      from: { path: '^sandbox-agent/' },
      to: { path: atOrAbove('^domain/', STORE, '^runtime/', '^control-plane/', '^integrations/', ACTIVITIES, WORKFLOWS, ENTRY) },
    },
    {
      name: 'agent-reached-through-its-contract',
      severity: 'error',
      comment: 'The host reaches the sandbox agent only through sandbox-agent/contract/ and the one client built on it (runtime/agent-client.ts), never through the agent\'s internals.',
      from: { path: PRODUCT, pathNot: '^sandbox-agent/' },
      to: { path: '^sandbox-agent/', pathNot: '^sandbox-agent/contract/' },
    },
    {
      name: 'activities-only-reach-down',
      severity: 'error',
      comment: 'activities/ (floor 4) may use floors 1-3, never workflows or entry points.',
      from: { path: ACTIVITIES },
      to: { path: atOrAbove(WORKFLOWS, ENTRY) },
    },
    {
      name: 'workflows-only-reach-down',
      severity: 'error',
      comment: 'workflows/ (floor 5) never import entry points.',
      from: { path: WORKFLOWS },
      to: { path: ENTRY },
    },
    {
      name: 'workflows-import-activities-as-types',
      severity: 'error',
      comment: 'A workflow runs in Temporal\'s deterministic sandbox: it calls activities through proxyActivities and imports them as types only (import type).',
      from: { path: WORKFLOWS },
      to: { path: ACTIVITIES, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'workflows-do-no-io',
      severity: 'error',
      comment: 'A workflow must replay deterministically: it imports no data access, runtime or control-plane code (types excepted) and no Node API.',
      from: { path: WORKFLOWS },
      to: { path: '^(store|runtime|control-plane|integrations)/|^(node:)?(fs|fs/promises|child_process|http|https|net|crypto|os|path)$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'product-never-imports-tests',
      severity: 'error',
      comment: 'Product code does not depend on tests, benchmarks or examples.',
      from: { path: PRODUCT },
      to: { path: '^(test|bench|examples)/' },
    },
    {
      name: 'product-never-imports-dev-dependencies',
      severity: 'error',
      comment: 'A devDependency is missing from a production install (npm prune --omit=dev).',
      from: { path: PRODUCT },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-unresolvable',
      severity: 'error',
      comment: 'An import that resolves to nothing.',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist|\\.data[^/]*|\\.tools)/' },
    // Product folders, packages, and the Node built-ins the rules name (which are no files).
    includeOnly: '^(domain|store|runtime|sandbox-agent|control-plane|integrations|activities|workflows|api|workers|cli|scripts|bench|test|examples)/|node_modules|^(node:)?(fs|fs/promises|child_process|http|https|net|dgram|crypto|os|path)$',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['require', 'node', 'default'], mainFields: ['main', 'types'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
