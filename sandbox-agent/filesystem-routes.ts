import { createReadStream } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { parsePermissions, type SandboxFiles } from './filesystem';
import { HttpError, badRequest, field, queryFlag, queryInt, readJsonObject, sendJson } from './http';
import { multipartBoundary, parseMultipart } from './multipart';

export const TREE_DEFAULT_DEPTH = 8;
export const TREE_MAX_DEPTH = 64;
export const TREE_DEFAULT_ENTRIES = 10_000;
export const TREE_MAX_ENTRIES = 100_000;

/**
 * /filesystem/{path} (read, write, delete) and /filesystem/tree/{path} (a bounded recursive
 * listing). `rest` is the still-encoded path after the prefix.
 */
export function filesystemRoutes(files: SandboxFiles) {
  async function tree(req: IncomingMessage, res: ServerResponse, rest: string, query: URLSearchParams) {
    if (req.method !== 'GET') throw new HttpError(405, `${req.method} is not allowed on /filesystem/tree`);
    const depth = queryInt(query, 'depth', TREE_DEFAULT_DEPTH, 1, TREE_MAX_DEPTH);
    const maxEntries = queryInt(query, 'maxEntries', TREE_DEFAULT_ENTRIES, 1, TREE_MAX_ENTRIES);
    sendJson(res, 200, await files.tree(files.parse(rest), { depth, maxEntries }));
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
    await pipeline(createReadStream(real), res);
  }

  async function write(req: IncomingMessage, res: ServerResponse, path: string, query: URLSearchParams) {
    const contentType = req.headers['content-type'];
    const boundary = multipartBoundary(contentType);
    if (boundary) {
      const { fields, sawFile } = await parseMultipart(req, boundary, 'file', (data) => files.writeFile(path, data));
      if (!sawFile) throw badRequest("the multipart body has no 'file' part");
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

  return async function handle(req: IncomingMessage, res: ServerResponse, rest: string, query: URLSearchParams): Promise<void> {
    if (rest === 'tree' || rest.startsWith('tree/')) return tree(req, res, rest.slice(4), query);
    const path = files.parse(rest);
    switch (req.method) {
      case 'GET':
      case 'HEAD':
        return read(req, res, path, query);
      case 'PUT':
      case 'POST':
        return write(req, res, path, query);
      case 'DELETE':
        return remove(res, path, query);
      default:
        throw new HttpError(405, `${req.method} is not allowed on /filesystem`);
    }
  };
}
