import fs from 'node:fs';
import path from 'node:path';
import { startRegistry, type TestRegistry } from '../../test/helpers/oci-registry';

/**
 * Runs an image benchmark: a registry of its own on loopback (Debian's docker-registry) storing
 * under `root`, the body, then the registry stopped and `root` removed whatever happened; a
 * failure ends the process with its stack and exit code 1.
 */
export function runWithRegistry(root: string, body: (registry: TestRegistry) => Promise<void>): void {
  const main = async () => {
    fs.mkdirSync(root, { recursive: true });
    const registry = await startRegistry(path.join(root, 'registry'));
    try {
      await body(registry);
    } finally {
      await registry.close();
      fs.rmSync(root, { recursive: true, force: true });
    }
  };
  main().catch((err) => {
    process.stderr.write(`${(err as Error).stack ?? err}\n`);
    process.exit(1);
  });
}
