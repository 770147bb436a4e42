import type { IncomingMessage, ServerResponse } from 'node:http';
import { MULTIPART_MAX_PART_BYTES } from './contract/limits';
import type { MultipartPartInfo } from './contract/multipart-upload';
import { parsePermissions, type SandboxFiles } from './filesystem';
import { badRequest, decodeSegment, field, readJsonObject, sendJson } from './http';
import { multipartBoundary, parseMultipart } from './multipart';
import type { MultipartUploads } from './multipart-uploads';
import type { RouteContext, RouteHandlers } from './route-handler';

type MultipartUploadOperation =
  | 'listMultipartUploads'
  | 'initiateMultipartUpload'
  | 'uploadMultipartPart'
  | 'completeMultipartUpload'
  | 'abortMultipartUpload'
  | 'listMultipartParts';

/** The /filesystem-multipart routes: a file sent in numbered parts, then assembled (see MultipartUploads). */
export function multipartUploadRoutes(files: SandboxFiles, uploads: MultipartUploads) {
  async function initiate(req: IncomingMessage, res: ServerResponse, context: RouteContext) {
    const target = files.parse(context.params.path);
    const body = await readJsonObject(req, false);
    const permissions = parsePermissions(field.optionalString(body, 'permissions')) ?? 0o644;
    const { uploadId, path } = await uploads.initiate(target, permissions);
    sendJson(res, 200, { uploadId, path });
  }

  async function part(req: IncomingMessage, res: ServerResponse, context: RouteContext) {
    const partNumber = requiredInteger(context.query, 'partNumber');
    const boundary = multipartBoundary(req.headers['content-type']);
    if (!boundary) throw badRequest("a part is sent as multipart/form-data with a 'file' part");
    const uploadId = uploadIdOf(context);
    let answer: unknown;
    await parseMultipart(req, boundary, {
      fileField: 'file',
      maxFileBytes: MULTIPART_MAX_PART_BYTES,
      onFile: async (data) => {
        answer = await uploads.putPart(uploadId, partNumber, data);
      },
    });
    sendJson(res, 200, answer);
  }

  async function complete(req: IncomingMessage, res: ServerResponse, context: RouteContext) {
    const body = await readJsonObject(req, true);
    if (!Array.isArray(body.parts)) throw badRequest("'parts' must be a list of {partNumber, etag}");
    const listed = body.parts.map((entry: unknown, i) => {
      if (typeof entry !== 'object' || entry === null) throw badRequest(`'parts[${i}]' must be an object {partNumber, etag}`);
      return entry as MultipartPartInfo;
    });
    const path = await uploads.complete(uploadIdOf(context), listed);
    sendJson(res, 200, { path, message: 'Multipart upload completed' });
  }

  const list = async (_req: IncomingMessage, res: ServerResponse) => sendJson(res, 200, { uploads: await uploads.list() });
  const parts = async (_req: IncomingMessage, res: ServerResponse, context: RouteContext) => {
    const uploadId = uploadIdOf(context);
    sendJson(res, 200, { uploadId, parts: await uploads.listParts(uploadId) });
  };

  return {
    listMultipartUploads: list,
    initiateMultipartUpload: initiate,
    uploadMultipartPart: part,
    completeMultipartUpload: complete,
    abortMultipartUpload: async (_req, res, context) => sendJson(res, 200, { path: await uploads.abort(uploadIdOf(context)), message: 'Multipart upload aborted' }),
    listMultipartParts: parts,
  } satisfies RouteHandlers<MultipartUploadOperation>;
}

const uploadIdOf = (context: RouteContext) => decodeSegment(context.params.uploadId);

/** A query parameter that must be there, as a whole number (its range is the caller's to check). */
function requiredInteger(query: URLSearchParams, name: string): number {
  const raw = query.get(name);
  if (raw === null || raw === '') throw badRequest(`query parameter '${name}' is required`);
  if (!/^-?\d+$/.test(raw)) throw badRequest(`query parameter '${name}' must be an integer`);
  return Number(raw);
}
