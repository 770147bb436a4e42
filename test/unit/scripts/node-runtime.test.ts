import { execFileSync } from 'node:child_process';
import { repoRoot } from '../../../scripts/stack/binaries';

/** The LTS line the project's scripts run on (scripts/node-runtime.sh). */
function pinnedVersion(): string {
  return execFileSync('bash', ['-c', '. scripts/node-runtime.sh && echo "$HANGAR_NODE_VERSION"'], { cwd: repoRoot() }).toString().trim();
}

test('the suite runs on the Node.js LTS the scripts bring, or a newer one the machine has', () => {
  const [major] = pinnedVersion().split('.').map(Number);
  expect(major).toBeGreaterThanOrEqual(24);
  expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(major);
});

test('with-node.sh runs a command on that Node.js, whatever node comes first on the caller’s PATH', () => {
  const [major] = pinnedVersion().split('.').map(Number);
  const version = execFileSync('bash', ['scripts/with-node.sh', 'node', '-p', 'process.versions.node'], { cwd: repoRoot() }).toString().trim();
  expect(Number(version.split('.')[0])).toBeGreaterThanOrEqual(major);
});
