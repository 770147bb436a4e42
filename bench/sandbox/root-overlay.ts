import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { rootMountPoints, type LaunchPlan } from '../../runtime/bwrap-args';
import { BwrapRuntime } from '../../runtime/bwrap-runtime';
import { sandboxLayout } from '../../runtime/layout';
import { prepareUpperLayer, rootOverlayCommand } from '../../runtime/root-overlay';
import type { RuntimeSandboxSpec } from '../../runtime/sandbox-runtime';
import { buildOnRuntime, userAppDockerfile } from '../../test/helpers/build-context';
import { buildTestImage, pushTestImage } from '../../test/helpers/oci-registry';
import { percentile } from '../common/stats';
import { createToFirstProcess as startToFirstProcess } from './first-process';
import { repoRoot } from '../../scripts/stack/binaries';
import { runWithRegistry } from './with-registry';

/**
 * A sandbox's root on a stored image: an overlay of the image with the sandbox's own upper layer
 * (runtime/root-overlay.ts: the upper layer's mount points checked, `unshare --mount`, `mount -t
 * overlay`, bubblewrap binding it as /) against the same image shown as read-only binds of its
 * entries, as sandboxes ran before (`images.rootOverlay: false`). Run by hand after a build, as
 * root: `node dist/bench/sandbox/root-overlay.js`. The image is built from a Dockerfile (`USER
 * 1000`, an /opt/app of that user) on static busybox from a registry on loopback; with
 * BENCH_BASE_IMAGE=1 the built-in base-image (a Debian tree of a few hundred entries at its top
 * levels) is measured too, built first when this data folder has not (minutes).
 * Prints create -> first POST /process ok, both ways, alternating, no warm pool, and the ratio;
 * then the overlay's own steps alone (what it adds to a launch) against `true` run alone.
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

/**
 * The overlay's own steps alone, on a sandbox folder of the node's: the upper layer's mount points
 * checked, then the launcher's `unshare --mount`, shell and `mount -t overlay` ending in `true`
 * instead of bubblewrap; against `true` run alone (what the launcher costs without them).
 */
async function overlaySteps(runtime: BwrapRuntime, dataDir: string, image: string): Promise<{ onOverlay: number[]; onBinds: number[] }> {
  const stored = (await runtime.findWorkspaceImage('bench', 'app', '1'))!;
  const s = spec(image);
  const layout = sandboxLayout(dataDir, s.id);
  const mountPoints = rootMountPoints(launchPlanFor(layout));
  const spawnOk = (file: string, args: string[]) => new Promise<void>((resolve, reject) => execFile(file, args, (err) => (err ? reject(err) : resolve())));
  const onOverlay: number[] = [];
  const onBinds: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    let start = process.hrtime.bigint();
    prepareUpperLayer(layout, stored.rootfs, mountPoints);
    const [unshare, ...rest] = rootOverlayCommand('unshare', dataDir, layout, stored.rootfs);
    await spawnOk(unshare, [...rest, 'true']);
    onOverlay.push(Number(process.hrtime.bigint() - start) / 1e6);
    start = process.hrtime.bigint();
    await spawnOk('true', []);
    onBinds.push(Number(process.hrtime.bigint() - start) / 1e6);
    fs.rmSync(layout.root, { recursive: true, force: true });
  }
  return { onOverlay, onBinds };
}

/** A launch plan with the mount points every sandbox has (none of a volume): what the overlay's steps check. */
function launchPlanFor(layout: ReturnType<typeof sandboxLayout>): LaunchPlan {
  return {
    sandboxId: 'bench',
    uid: 1000,
    gid: 1000,
    image: { name: 'app:1', mounts: [], etcDir: '/', hostLoader: { dir: '/', loader: 'ld.so' } },
    etcFiles: [],
    agentConfigHostPath: '/',
    writable: layout.writable,
    runDir: layout.runDir,
    apiDir: layout.apiDir,
    platformDir: layout.platformDir,
    codeDir: layout.codeDir,
    volumes: [],
    agent: { nodeBinary: process.execPath, agentDir: '/', nodeModulesDir: '/', nodeFlags: [] },
    agentEnv: {},
    seccompFd: 3,
  };
}

function row(what: string, { onOverlay, onBinds }: { onOverlay: number[]; onBinds: number[] }): void {
  const [p50, f50] = [percentile(onOverlay, 50), percentile(onBinds, 50)];
  const p95 = (samples: number[]) => percentile(samples, 95).toFixed(1).padStart(7);
  log(`${what.padEnd(34)} overlay root p50 ${p50.toFixed(1).padStart(7)} ms p95 ${p95(onOverlay)} ms | read-only binds p50 ${f50.toFixed(1).padStart(7)} ms p95 ${p95(onBinds)} ms | ${(p50 / f50).toFixed(2)}x`);
}

runWithRegistry(root, async (registry) => {
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
  const steps = await overlaySteps(overlay, dataDir, 'app:1');
  log(`the overlay's own steps (mount points checked, unshare, sh, mount -t overlay) p50 ${percentile(steps.onOverlay, 50).toFixed(1)} ms p95 ${percentile(steps.onOverlay, 95).toFixed(1)} ms | \`true\` alone p50 ${percentile(steps.onBinds, 50).toFixed(1)} ms`);
  if (BASE_IMAGE) {
    await overlay.ensureBaseImage();
    row('create -> first process, base-image', await compare(overlay, binds, 'base-image'));
  }
});
