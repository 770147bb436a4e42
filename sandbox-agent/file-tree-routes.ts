import { deleteTree, writeTree } from './file-tree';
import type { SandboxFiles } from './filesystem';
import { badRequest, queryFlag, readJsonObject, sendJson } from './http';
import type { RouteHandlers } from './route-handler';

/** PUT and DELETE /filesystem/tree/{path}: several files written at once (fs.writeTree), a directory deleted. */
export function fileTreeRoutes(files: SandboxFiles) {
  return {
    writeTree: async (req, res, { params }) => {
      const root = files.parse(params.path);
      const body = await readJsonObject(req, true);
      if (typeof body.files !== 'object' || body.files === null || Array.isArray(body.files)) throw badRequest("'files' must be an object of relative path -> text content");
      sendJson(res, 200, await writeTree(files, root, body.files as Record<string, unknown>));
    },
    deleteTree: async (_req, res, { params, query }) => {
      const root = files.parse(params.path);
      await deleteTree(files, root, queryFlag(query, 'recursive'));
      sendJson(res, 200, { path: root, message: 'Directory deleted' });
    },
  } satisfies RouteHandlers<'writeTree' | 'deleteTree'>;
}
