import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from '../../../scripts/stack/binaries';

/**
 * docker-compose.yml as Docker would read it (YAML 1.1 merge keys included), checked without
 * Docker: the services are there, the runtime node has the privileges sandboxes need, and every
 * variable it is given is one the platform's configuration reads (a misspelt name would be
 * ignored silently and the node would run with a default).
 */

interface Service {
  build?: string | { context: string; target?: string };
  environment?: Record<string, string>;
  volumes?: string[];
  privileged?: boolean;
  cgroup?: string;
  sysctls?: Record<string, string>;
  depends_on?: Record<string, unknown>;
}

const root = repoRoot();
const composeText = fs.readFileSync(path.join(root, 'docker-compose.yml'), 'utf8');
const compose = parse(composeText, { merge: true }) as { services: Record<string, Service>; volumes: Record<string, unknown> };

/** The variable names domain/config.ts reads: the node worker's configuration, as every process's. */
function configVariables(): Set<string> {
  const source = fs.readFileSync(path.join(root, 'domain', 'config.ts'), 'utf8');
  const names = new Set<string>();
  for (const match of source.matchAll(/env\.([A-Z][A-Z0-9_]+)|\(env, '([A-Z][A-Z0-9_]+)'/g)) names.add(match[1] ?? match[2]);
  return names;
}

/** The commented second node, uncommented: the README tells users to do exactly that. */
function secondNode(): Service {
  const lines = composeText.split('\n');
  const start = lines.findIndex((line) => line === '  # node-2:');
  expect(start).toBeGreaterThan(0);
  const block: string[] = [];
  for (const line of lines.slice(start)) {
    if (!line.startsWith('  # ') && !line.startsWith('  #   ')) break;
    block.push(line.replace(/^ {2}# ?/, ''));
  }
  const anchors = 'x-hangar-env: &hangar-env\n' + composeText.split('x-hangar-env: &hangar-env\n')[1].split('\n\n')[0] + '\n';
  return (parse(`${anchors}${block.join('\n')}\n`, { merge: true }) as Record<string, Service>)['node-2'];
}

test('the platform services and a runtime node are there', () => {
  expect(Object.keys(compose.services)).toEqual(expect.arrayContaining(['postgres', 'clickhouse', 'temporal', 'setup', 'api', 'worker', 'node-1']));
});

test("the node runs the node worker's image with the privileges bwrap, cgroups and nftables need", () => {
  const node = compose.services['node-1'];
  expect(node.build).toEqual({ context: '.', target: 'node' });
  const dockerfile = fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8');
  expect(dockerfile).toMatch(/^FROM \S+ AS node$/m);
  expect(dockerfile).toMatch(/CMD \["node", "dist\/workers\/node.js"\]/);
  for (const tool of ['bubblewrap', 'python3-seccomp', 'nftables', 'iproute2', 'skopeo', 'umoci', 'buildah']) expect(dockerfile).toContain(tool);
  expect(node.privileged).toBe(true);
  expect(node.cgroup).toBe('host');
  expect(node.sysctls).toEqual({ 'net.ipv4.ip_forward': '1' });
  // The API's data volume: the gateways reach the node's sandboxes through their sockets there.
  expect(node.volumes).toEqual(['hangar-data:/data']);
  expect(compose.services.api.volumes).toContain('hangar-data:/data');
  expect(node.depends_on).toHaveProperty('setup');
});

test('every variable the node, the API and the control worker get is one the configuration reads', () => {
  const known = configVariables();
  expect(known).toContain('HANGAR_NODE_ID');
  for (const name of ['node-1', 'api', 'worker', 'setup']) {
    const env = compose.services[name].environment ?? {};
    expect(Object.keys(env).filter((variable) => !known.has(variable))).toEqual([]);
    for (const needed of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'HANGAR_DATA_DIR', 'HANGAR_NODE_ID']) expect(env[needed]).toBeTruthy();
  }
  // The API sends work to the node's queue: both name the same node.
  expect(compose.services.api.environment!.HANGAR_NODE_ID).toBe(compose.services['node-1'].environment!.HANGAR_NODE_ID);
});

test('the commented second node is a valid service of its own: another id, another data volume', () => {
  const node = secondNode();
  expect(node.build).toEqual({ context: '.', target: 'node' });
  expect(node.environment!.HANGAR_NODE_ID).toBe('node-2');
  expect(node.environment!.DATABASE_URL).toBe(compose.services['node-1'].environment!.DATABASE_URL);
  expect(node.volumes).toEqual(['node-2-data:/data']);
  expect(node.privileged).toBe(true);
  expect(node.cgroup).toBe('host');
  expect(composeText).toMatch(/^ {2}# node-2-data:$/m);
});
