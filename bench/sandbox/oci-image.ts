import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BASE_IMAGE_PACKAGES, hostDebianSuite } from '../../runtime/base-image';
import { BwrapRuntime } from '../../runtime/bwrap-runtime';
import type { RuntimeSandboxSpec } from '../../runtime/sandbox-runtime';
import { buildTestImage, pushTestImage } from '../../test/helpers/oci-registry';
import { percentile } from '../common/stats';
import { createToFirstProcess as startToFirstProcess } from './first-process';
import { repoRoot } from '../../scripts/stack/binaries';
import { runWithRegistry } from './with-registry';

/**
 * Sandboxes on images pulled from a registry (run by hand after a build, as root:
 * `node dist/bench/sandbox/oci-image.js`). A registry on loopback (Debian's docker-registry)
 * serves an image built from static busybox plus BENCH_IMAGE_MB (200) of random bytes. Prints:
 *   - create -> first POST /process ok from the pulled image (already on the node) vs from `base`,
 *     both without a warm pool, alternating (target: at most 1.2x);
 *   - create -> first POST /process ok from the built-in base-image vs from the pulled image (a
 *     cached custom image), alternating (target: at most 1.2x);
 *   - the same from base-image, the default image, vs from `base`, the host's folders (the default
 *     before it): what moving the default costs a sandbox's start;
 *   - the first build of base-image on a node (mmdebstrap, gzip, unpack, record) vs mmdebstrap
 *     alone writing the same tree to a tar, in the same run;
 *   - a pull into an empty store (the manifest read first for the progress's total, skopeo copy, its
 *     layers unpacked as they come, the size measured) vs `skopeo copy` of the same image alone into
 *     an empty layout (target: at most 1.5x), and what the manifest read (`skopeo inspect --raw`)
 *     costs alone.
 * Options: BENCH_RUNS (20 starts of each; 0 skips the starts and the base-image build), BENCH_PULLS
 * (3; 0 skips the pulls), BENCH_IMAGE_MB (200).
 */
const env = process.env;
const RUNS = Number(env.BENCH_RUNS ?? 20);
const PULLS = Number(env.BENCH_PULLS ?? 3);
const IMAGE_MB = Number(env.BENCH_IMAGE_MB ?? 200);
const root = path.join(repoRoot(), '.data-bench', `oci-${process.pid}`);
const log = (line: string) => process.stdout.write(`${line}\n`);

const since = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;
const run = (file: string, args: string[]) => new Promise<void>((resolve, reject) => execFile(file, args, (err) => (err ? reject(err) : resolve())));

let counter = 0;
const spec = (image: string): RuntimeSandboxSpec => ({ id: `oci-${process.pid}-${++counter}`, workspaceId: 'bench', image, memoryMb: 512, envs: [], volumes: [] });
const createToFirstProcess = (runtime: BwrapRuntime, image: string) => startToFirstProcess(runtime, spec(image));

const row = (what: string, samples: number[], floorName: string, floor: number[], target: string) => {
  const [p50, f50] = [percentile(samples, 50), percentile(floor, 50)];
  log(`${what.padEnd(46)} p50 ${p50.toFixed(1).padStart(8)} ms  p95 ${percentile(samples, 95).toFixed(1).padStart(8)} ms | ${floorName.padEnd(34)} p50 ${f50.toFixed(1).padStart(8)} ms | ${(p50 / f50).toFixed(2)}x (target ${target})`);
};

/** The node's first build of base-image, and mmdebstrap alone making the same tree into a tar (its floor). */
async function firstBaseImageBuild(runtime: BwrapRuntime): Promise<{ ms: number; floorMs: number; storedBytes: number }> {
  let start = process.hrtime.bigint();
  const built = await runtime.ensureBaseImage();
  const ms = since(start);
  const tar = path.join(root, 'mmdebstrap-alone.tar');
  start = process.hrtime.bigint();
  await run('mmdebstrap', ['--quiet', '--mode=root', '--variant=minbase', '--format=tar', `--include=${BASE_IMAGE_PACKAGES.join(',')}`, hostDebianSuite(), tar]);
  const floorMs = since(start);
  fs.rmSync(tar, { force: true });
  return { ms, floorMs, storedBytes: built.storedBytes };
}

/** Create -> first process on the pulled image, base and base-image, and the first build of base-image. */
async function starts(image: string): Promise<void> {
  const runtime = new BwrapRuntime({ dataDir: path.join(root, 'node') });
  await runtime.pullImage(image);
  const build = await firstBaseImageBuild(runtime);
  // One of each first: the host loader folder and the image's /etc are built once per node.
  for (const name of [image, 'base', 'base-image']) await createToFirstProcess(runtime, name);
  const onImage: number[] = [];
  const onBase: number[] = [];
  const onBaseImage: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    onImage.push(await createToFirstProcess(runtime, image));
    onBase.push(await createToFirstProcess(runtime, 'base'));
    onBaseImage.push(await createToFirstProcess(runtime, 'base-image'));
  }
  log(`image: busybox + ${IMAGE_MB} MB of random bytes; ${RUNS} starts of each`);
  row('create -> first process, pulled image', onImage, 'the same from base', onBase, '<= 1.2x');
  row('create -> first process, base-image', onBaseImage, 'the same from the pulled image', onImage, '<= 1.2x');
  row('create -> first process, base-image (default)', onBaseImage, "the same from base (host's folders)", onBase, 'none');
  log(`first build of base-image (${(build.storedBytes / 1e6).toFixed(0)} MB stored): ${(build.ms / 1000).toFixed(1)} s | mmdebstrap alone to a tar ${(build.floorMs / 1000).toFixed(1)} s | ${(build.ms / build.floorMs).toFixed(2)}x`);
}

runWithRegistry(root, async (registry) => {
  const layout = path.join(root, 'layout');
  buildTestImage(layout, 'big', { files: { '/marker.txt': 'bench\n' }, randomFiles: { '/data/blob': IMAGE_MB * 1024 * 1024 }, env: ['PATH=/bin'] });
  const image = `${registry.address}/bench/big:1`;
  pushTestImage(layout, 'big', image);

  const pulls: number[] = [];
  const copies: number[] = [];
  const manifestReads: number[] = [];
  for (let i = 0; i < PULLS; i++) {
    const store = new BwrapRuntime({ dataDir: path.join(root, `pull-${i}`) });
    let start = process.hrtime.bigint();
    await store.pullImage(image);
    pulls.push(since(start));
    const target = path.join(root, `copy-${i}`);
    start = process.hrtime.bigint();
    await run('skopeo', ['copy', '--quiet', '--src-tls-verify=false', '--src-no-creds', `docker://${image}`, `oci:${target}:image`]);
    copies.push(since(start));
    start = process.hrtime.bigint();
    await run('skopeo', ['inspect', '--raw', '--tls-verify=false', '--no-creds', `docker://${image}`]);
    manifestReads.push(since(start));
    fs.rmSync(path.join(root, `pull-${i}`), { recursive: true, force: true });
    fs.rmSync(target, { recursive: true, force: true });
  }

  if (PULLS > 0) {
    row(`pull of the image (${IMAGE_MB} MB) into an empty store`, pulls, 'skopeo copy of it alone', copies, '<= 1.5x');
    const read = percentile(manifestReads, 50);
    log(`of which the manifest read first (skopeo inspect --raw, alone): p50 ${read.toFixed(1)} ms, ${((100 * read) / percentile(pulls, 50)).toFixed(1)} % of the pull`);
  }
  if (RUNS > 0) await starts(image);
});
