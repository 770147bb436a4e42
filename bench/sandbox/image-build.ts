import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import { parseDockerfile, rewriteDockerfile } from '../../domain/images/dockerfile';
import { buildahBuild, type BuildahOptions } from '../../runtime/buildah';
import { BwrapRuntime } from '../../runtime/bwrap-runtime';
import { buildTestImage, pushTestImage } from '../../test/helpers/oci-registry';
import { percentile } from '../common/stats';
import { repoRoot } from '../../scripts/stack/binaries';
import { runWithRegistry } from './with-registry';

/**
 * Builds of a workspace's image from a Dockerfile (run by hand after a build, as root:
 * `node dist/bench/sandbox/image-build.js`). The base is static busybox from a registry on
 * loopback; the context holds BENCH_CONTEXT_MB (20) of random files. Prints:
 *   - the first build into an empty node (the base pulled, every step run, pushed, unpacked);
 *   - a rebuild with every step cached (BwrapRuntime.buildImage: context unpacked, buildah's cached
 *     build, push into the store, the digest already unpacked), target <= 2 s, against the floor:
 *     `buildah build --layers` alone of the same context and Dockerfile, with the same storage.
 * Through the runtime, not the API: the workflow adds two activity round trips (tens of ms).
 * Options: BENCH_RUNS (10), BENCH_CONTEXT_MB (20).
 */
const env = process.env;
const RUNS = Number(env.BENCH_RUNS ?? 10);
const CONTEXT_MB = Number(env.BENCH_CONTEXT_MB ?? 20);
const root = path.join(repoRoot(), '.data-bench', `image-build-${process.pid}`);
const log = (line: string) => process.stdout.write(`${line}\n`);

const since = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e6;

/** A context of CONTEXT_MB of random files (nothing compresses them) and a Dockerfile of every kind of step. */
async function writeContext(dir: string, base: string): Promise<{ archive: string; dockerfile: string }> {
  fs.mkdirSync(path.join(dir, 'src'), { recursive: true });
  for (let i = 0; i < CONTEXT_MB; i++) fs.writeFileSync(path.join(dir, 'src', `part-${i}.bin`), randomBytes(1024 * 1024));
  const dockerfile = [`FROM ${base}`, 'ARG MODE=bench', 'ENV APP_HOME=/app-files LANG=C.UTF-8', 'WORKDIR /app-files', 'COPY src/ /app-files/src/', 'RUN ls src | wc -l > count.txt && mkdir -p /var/cache/bench', 'USER 1000', 'CMD ["/bin/sh"]'].join('\n');
  fs.writeFileSync(path.join(dir, 'Dockerfile'), `${dockerfile}\n`);
  const archive = `${dir}.tar.gz`;
  await tar.c({ gzip: true, file: archive, cwd: dir, portable: true }, ['.']);
  return { archive, dockerfile };
}

const row = (what: string, samples: number[], floorName: string, floor: number[], target: string) => {
  const [p50, f50] = [percentile(samples, 50), percentile(floor, 50)];
  log(`${what.padEnd(40)} p50 ${p50.toFixed(1).padStart(8)} ms  p95 ${percentile(samples, 95).toFixed(1).padStart(8)} ms | ${floorName.padEnd(34)} p50 ${f50.toFixed(1).padStart(8)} ms | ${(p50 / f50).toFixed(2)}x (${target})`);
};

runWithRegistry(root, async (registry) => {
  const layout = path.join(root, 'layout');
  buildTestImage(layout, 'box', { files: { '/marker.txt': 'bench\n' }, env: ['PATH=/bin'] });
  const base = `${registry.address}/bench/box:1`;
  pushTestImage(layout, 'box', base);
  const context = await writeContext(path.join(root, 'context'), base);
  const dataDir = path.join(root, 'node');
  const runtime = new BwrapRuntime({ dataDir });
  const build = () => runtime.buildImage({ workspaceId: 'bench', name: 'app', tag: '1', owner: 'bench', contextArchive: context.archive, onStep: () => undefined });

  let start = process.hrtime.bigint();
  const first = await build();
  const firstMs = since(start);
  const rebuilds: number[] = [];
  const floor: number[] = [];
  // The floor builds what the runtime builds: the same Dockerfile with its FROM pointed at the store's copy, the same storage.
  const stored = await runtime.findImage(base);
  const imagesDir = path.join(dataDir, 'images');
  const baseLayout = path.join(imagesDir, 'oci', 'layouts', stored!.digest.slice('sha256:'.length));
  const dockerfile = path.join(root, 'Dockerfile.floor');
  fs.writeFileSync(dockerfile, rewriteDockerfile(parseDockerfile(context.dockerfile), new Map([[base, `oci:${path.relative(path.join(imagesDir, 'oci'), baseLayout)}:image`]])));
  const options: BuildahOptions = {
    buildahPath: 'buildah',
    unsharePath: 'unshare',
    root: path.join(imagesDir, 'buildah', 'storage'),
    runroot: path.join(imagesDir, 'buildah', 'run'),
    storageDriver: 'overlay',
    policyFile: path.join(imagesDir, 'oci', 'policy.json'),
    workDir: root,
    cwd: path.join(imagesDir, 'oci'),
  };
  for (let i = 0; i < RUNS; i++) {
    start = process.hrtime.bigint();
    const again = await build();
    rebuilds.push(since(start));
    if (again.digest !== first.digest) throw new Error(`a cached rebuild changed the digest: ${first.digest} -> ${again.digest}`);
    start = process.hrtime.bigint();
    await buildahBuild(options, { dockerfile, contextDir: path.join(root, 'context'), tag: 'localhost/bench/floor:1', onStep: () => undefined });
    floor.push(since(start));
  }
  log(`context: ${CONTEXT_MB} MB of random files, 7 steps on static busybox; ${RUNS} rebuilds`);
  log(`first build into an empty node            ${firstMs.toFixed(1).padStart(8)} ms (base pulled, every step run, pushed, unpacked)`);
  row('rebuild, every step cached', rebuilds, 'buildah build --layers alone', floor, 'target <= 2000 ms');
  log(`rebuild p50 ${percentile(rebuilds, 50) <= 2000 ? 'within' : 'OVER'} the 2 s target`);
});
