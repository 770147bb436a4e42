import { createReadStream } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { TREE_DEFAULT_DEPTH, TREE_DEFAULT_ENTRIES, TREE_MAX_DEPTH, TREE_MAX_ENTRIES } from './contract/limits';
import { parsePermissions, type SandboxFiles } from './filesystem';
import { badRequest, field, queryFlag, queryInt, readJsonObject, sendJson } from './http';
import { multipartBoundary, parseMultipart } from './multipart';
import type { RouteContext, RouteHandlers } from './route-handler';


type FilesystemOperation = 'readFile' | 'writeFile' | 'writeFileByPost' | 'deleteFile' | 'fileTree';

/** The /filesystem routes of the contract: read, write and delete (/{path}), and a bounded recursive listing (/tree/{path}). */
export function filesystemRoutes(files: SandboxFiles) {
  async function tree(res: ServerResponse, path: string, query: URLSearchParams) {
    const depth = queryInt(query, 'depth', TREE_DEFAULT_DEPTH, 1, TREE_MAX_DEPTH);
    const maxEntries = queryInt(query, 'maxEntries', TREE_DEFAULT_ENTRIES, 1, TREE_MAX_ENTRIES);
    sendJson(res, 200, await files.tree(path, { depth, maxEntries }));
  }

  async function read(req: IncomingMessage, res: ServerResponse, path: string, query: URLSearchParams) {
    const { info, isDirectory, real } = await files.info(path);
    if (isDirectory) {
      const { truncated: _cut, ...directory } = await files.tree(path, { depth: 1, maxEntries: TREE_MAX_ENTRIES });
      return sendJson(res, 200, directory);
    }
    const wantsBytes = queryFlag(query, 'download') || /application\/octet-stream/i.test(req.headers.accept ?? '');
    if (!wantsBytes) return sendJson(res, 200, await files.readText(path));
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': info.size,
      'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(info.name)}`,
    });
    // HEAD (served by this GET route): the length is known from the file's size, its bytes are not read.
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    await pipeline(createReadStream(real), res);
  }

  async function write(req: IncomingMessage, res: ServerResponse, path: string, query: URLSearchParams) {
    const contentType = req.headers['content-type'];
    const boundary = multipartBoundary(contentType);
    if (boundary) {
      const { fields } = await parseMultipart(req, boundary, { fileField: 'file', onFile: (data) => files.writeFile(path, data) });
      const permissions = parsePermissions(fields.get('permissions'));
      if (permissions !== undefined) await files.setPermissions(path, permissions);
      return sendJson(res, 200, { path, message: 'File uploaded' });
    }
    if (contentType && /^application\/octet-stream/i.test(contentType)) {
      await files.writeFile(path, req, parsePermissions(query.get('permissions') ?? undefined));
      return sendJson(res, 200, { path, message: 'File uploaded' });
    }
    const body = await readJsonObject(req, false);
    const permissions = parsePermissions(field.optionalString(body, 'permissions'));
    if (field.optionalBoolean(body, 'isDirectory')) {
      if (body.content !== undefined) throw badRequest("'content' cannot be given with isDirectory: true");
      await files.makeDirectory(path, permissions);
      return sendJson(res, 200, { path, message: 'Directory created' });
    }
    await files.writeFile(path, field.optionalString(body, 'content') ?? '', permissions);
    sendJson(res, 200, { path, message: 'File written' });
  }

  async function remove(res: ServerResponse, path: string, query: URLSearchParams) {
    await files.remove(path, queryFlag(query, 'recursive'));
    sendJson(res, 200, { path, message: 'Deleted' });
  }

  /** The sandbox path a route names. */
  const pathOf = ({ params }: RouteContext) => files.parse(params.path);

  return {
    readFile: (req, res, context) => read(req, res, pathOf(context), context.query),
    writeFile: (req, res, context) => write(req, res, pathOf(context), context.query),
    writeFileByPost: (req, res, context) => write(req, res, pathOf(context), context.query),
    deleteFile: (_req, res, context) => remove(res, pathOf(context), context.query),
    fileTree: (_req, res, context) => tree(res, pathOf(context), context.query),
  } satisfies RouteHandlers<FilesystemOperation>;
}
