import { randomBytes } from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import * as tar from 'tar';
import { buildContextPaths, contextEntryProblem, contextPath, DOCKERFILE_LIMIT_BYTES } from '../../../domain/images/build-context';
import { DockerfileError, parseDockerfile, type ParsedDockerfile } from '../../../domain/images/dockerfile';
import { badRequest } from '../../../domain/errors';
import { receiveArchive } from '../uploads/archive-upload';

export interface StoredContext {
  sha256: string;
  bytes: number;
  dockerfile: ParsedDockerfile;
}

/** Every entry checked (paths, types, links), the Dockerfile at the root read and parsed. */
async function inspect(archive: string): Promise<ParsedDockerfile> {
  const problems: string[] = [];
  let dockerfile: Buffer | undefined;
  try {
    await tar.t({ file: archive, strict: true, onReadEntry: (entry) => {
      const problem = contextEntryProblem(entry.path, entry.type, entry.linkpath);
      if (problem) problems.push(problem);
      if (!problem && contextPath(entry.path) === 'Dockerfile' && entry.type !== 'Directory') {
        if (entry.type !== 'File' && entry.type !== 'OldFile' && entry.type !== 'ContiguousFile') problems.push('entry \'Dockerfile\' must be a file');
        else if ((entry.size ?? 0) > DOCKERFILE_LIMIT_BYTES) problems.push(`entry 'Dockerfile' is larger than ${DOCKERFILE_LIMIT_BYTES} bytes`);
        else {
          const chunks: Buffer[] = [];
          entry.on('data', (chunk: Buffer) => chunks.push(chunk));
          entry.on('end', () => (dockerfile = Buffer.concat(chunks)));
          return;
        }
      }
      entry.resume();
    } });
  } catch (err) {
    throw badRequest(`body: the build context is not a readable tar.gz archive (${(err as Error).message})`);
  }
  if (problems.length > 0) throw badRequest(`body: bad build context: ${problems.slice(0, 3).join('; ')}`);
  if (dockerfile === undefined) throw badRequest('body: the build context has no Dockerfile at its root');
  try {
    return parseDockerfile(dockerfile.toString('utf8'));
  } catch (err) {
    if (err instanceof DockerfileError) throw badRequest(`body: ${err.message}`, { line: err.line });
    throw err;
  }
}

/**
 * Receives an uploaded build context (tar.gz) and files it under its digest once it is known to be
 * good: within `limitBytes`, every entry inside the context, a Dockerfile at its root that the
 * platform builds. Anything wrong is a 4xx naming the problem and leaves nothing stored.
 */
export async function storeBuildContext(dataDir: string, body: Readable, limitBytes: number): Promise<StoredContext> {
  const root = buildContextPaths(dataDir, '0'.repeat(64)).root;
  await fsp.mkdir(root, { recursive: true, mode: 0o700 });
  const partial = path.join(root, `.upload-${process.pid}-${randomBytes(6).toString('hex')}`);
  try {
    const { sha256, bytes } = await receiveArchive(body, partial, limitBytes, 'the build context');
    const dockerfile = await inspect(partial);
    // Same content, same name: a rename over an existing copy changes nothing.
    await fsp.rename(partial, buildContextPaths(dataDir, sha256).archive);
    return { sha256, bytes, dockerfile };
  } finally {
    await fsp.rm(partial, { force: true });
  }
}
