import fs from 'node:fs';
import path from 'node:path';
import { BwrapRuntime } from '../../runtime/bwrap-runtime';
import type { RuntimeSandboxSpec } from '../../runtime/sandbox-runtime';
import { buildOnRuntime, userAppDockerfile } from '../../test/helpers/build-context';
import { buildTestImage, pushTestImage, startRegistry } from '../../test/helpers/oci-registry';
import { percentile } from '../common/stats';
import { createToFirstProcess as startToFirstProcess } from './first-process';
import { repoRoot } from '../../scripts/stack/binaries';

/**
 * A sandbox's root on a stored image: an overlay of the image with the sandbox's own upper layer
 * (runtime/root-overlay.ts: the upper layer's mount points checked, `unshare --mount`, `mount -t
 * overlay`, bubblewrap binding it as /) against the same image shown as read-only binds of its
 * entries, as sandboxes ran before (`images.rootOverlay: false`). Run by hand after a build, as
 * root: `node dist/bench/sandbox/root-overlay.js`. The image is built from a Dockerfile (`USER
 * 1000`, an /opt/app of that user) on static busybox from a registry on loopback; with
 * BENCH_BASE_IMAGE=1 the built-in base-image (a Debian tree of a few hundred entries at its top
 * levels) is measured too, built first when this data folder has not (minutes).
 * Prints create -> first POST /process ok, both ways, alternating, no warm pool, and the ratio.
 * Options: BENCH_RUNS (20 starts of each), BENCH_BASE_IMAGE (0).
 */
const env = process.env;
const RUNS = Number(env.BENCH_RUNS ?? 20);
const BASE_IMAGE = env.BENCH_BASE_IMAGE === '1';
const root = path.join(repoRoot(), '.data-bench', `root-overlay-${process.pid}`);
const log = (line: string) => process.stdout.write(`${line}\n`);

let counter = 0;
const spec = (image: string): RuntimeSandboxSpec => ({ id: `ovl-${process.pid}-${++counter}`, workspaceId: 'bench', image, memoryMb: 512, envs: [], volumes: [] });
const createToFirstProcess = (runtime: BwrapRuntime, image: string) => startToFirstProcess(runtime, spec(image));

/** Starts of each way, alternating, after one of each (the image's /etc and the host loader are made once per node). */
async function compare(overlay: BwrapRuntime, binds: BwrapRuntime, image: string): Promise<{ onOverlay: number[]; onBinds: number[] }> {
  await createToFirstProcess(overlay, image);
  await createToFirstProcess(binds, image);
  const onOverlay: number[] = [];
  const onBinds: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    onOverlay.push(await createToFirstProcess(overlay, image));
    onBinds.push(await createToFirstProcess(binds, image));
  }
  return { onOverlay, onBinds };
}

function row(what: string, { onOverlay, onBinds }: { onOverlay: number[]; onBinds: number[] }): void {
  const [p50, f50] = [percentile(onOverlay, 50), percentile(onBinds, 50)];
  const p95 = (samples: number[]) => percentile(samples, 95).toFixed(1).padStart(7);
  log(`${what.padEnd(34)} overlay root p50 ${p50.toFixed(1).padStart(7)} ms p95 ${p95(onOverlay)} ms | read-only binds p50 ${f50.toFixed(1).padStart(7)} ms p95 ${p95(onBinds)} ms | ${(p50 / f50).toFixed(2)}x`);
}

async function main(): Promise<void> {
  fs.mkdirSync(root, { recursive: true });
  const registry = await startRegistry(path.join(root, 'registry'));
  try {
    buildTestImage(path.join(root, 'layout'), 'box', { files: { '/marker.txt': 'bench\n' }, env: ['PATH=/bin'] });
    const base = `${registry.address}/bench/box:1`;
    pushTestImage(path.join(root, 'layout'), 'box', base);
    // One node's data folder, two runtimes on it: the same stored image either way.
    const dataDir = path.join(root, 'node');
    const overlay = new BwrapRuntime({ dataDir });
    const binds = new BwrapRuntime({ dataDir, images: { rootOverlay: false } });
    await buildOnRuntime(overlay, path.join(root, 'context.tar.gz'), { workspaceId: 'bench', name: 'app', tag: '1', context: { Dockerfile: userAppDockerfile(base) } });
    log(`${RUNS} starts of each, alternating, no warm pool`);
    row('create -> first process, app:1', await compare(overlay, binds, 'app:1'));
    if (BASE_IMAGE) {
      await overlay.ensureBaseImage();
      row('create -> first process, base-image', await compare(overlay, binds, 'base-image'));
    }
  } finally {
    await registry.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
