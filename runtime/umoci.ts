import fsp from 'node:fs/promises';
import path from 'node:path';
import { runImageTool } from './image-tools';

/**
 * Unpacks the image tagged `tag` in an OCI layout into `<bundleDir>/rootfs` (the bundle folder
 * must not exist yet) with umoci: its layers applied in order, whiteouts honoured, owners and
 * modes kept. `raw unpack`: the rootfs alone, without the runtime config and the mtree manifest
 * `umoci unpack` adds, which hashes every file again (a third of the time for a 200 MB image)
 * and which nothing here reads. The caller renames the bundle into place.
 */
export async function unpackImage(options: { layoutDir: string; tag: string; bundleDir: string; umociPath: string }): Promise<void> {
  await fsp.mkdir(options.bundleDir, { mode: 0o755 });
  const result = await runImageTool(options.umociPath, ['raw', 'unpack', '--image', `${options.layoutDir}:${options.tag}`, path.join(options.bundleDir, 'rootfs')], {});
  if (result.code !== 0) throw new Error(`umoci could not unpack the image: ${result.stderr.trim().split('\n').pop() ?? `exit ${result.code}`}`);
}
