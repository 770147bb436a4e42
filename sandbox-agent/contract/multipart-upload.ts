import { schemaOf } from './schema';

/**
 * Multipart upload (`/filesystem-multipart`): a big file sent in numbered parts, in any order and
 * concurrently, then assembled by `complete`, as the reference SDK's `fs.write` does above 5 MB.
 * Field names are the reference's.
 */

/** POST /filesystem-multipart/initiate/{path}: the body is optional. */
export interface MultipartInitiateRequest {
  /** Octal text of the finished file's mode, for example "0644" (the default). */
  permissions?: string;
}

export interface MultipartInitiateResponse {
  uploadId: string;
  /** The file the upload becomes. */
  path: string;
}

/** What PUT /filesystem-multipart/{uploadId}/part answers; `complete` is sent these back. */
export interface MultipartUploadPartResponse {
  partNumber: number;
  /** The first 128 bits of the SHA-256 of the part's bytes, in hex (opaque to clients, as the reference's MD5). */
  etag: string;
  size: number;
}

export interface UploadedPart extends MultipartUploadPartResponse {
  uploadedAt: string;
}

export interface MultipartPartInfo {
  partNumber: number;
  etag: string;
}

export interface MultipartCompleteRequest {
  parts: MultipartPartInfo[];
}

export interface MultipartListPartsResponse {
  uploadId: string;
  parts: UploadedPart[];
}

export interface MultipartUpload {
  uploadId: string;
  path: string;
  /** The finished file's mode, as a number (420 is 0644). */
  permissions: number;
  initiatedAt: string;
  /** By part number. */
  parts: Record<string, UploadedPart>;
}

export interface MultipartListUploadsResponse {
  uploads: MultipartUpload[];
}

const partNumber = { type: 'integer' as const, minimum: 1, maximum: 10_000, description: 'The part\'s place in the file, from 1.' };
const etag = { type: 'string' as const, description: 'What the part upload answered: the first 128 bits of the SHA-256 of its bytes, in hex.' };
const partFields = { partNumber, etag, size: { type: 'integer' as const, description: 'Bytes.' } };
const uploadedPartRef = { $ref: '#/components/schemas/UploadedPart' };

export const multipartInitiateRequestSchema = schemaOf<MultipartInitiateRequest>({
  type: 'object',
  properties: { permissions: { type: 'string', optional: true, pattern: '^0?[0-7]{3}$', description: 'Octal mode of the finished file (default "0644").' } },
});

export const multipartInitiateResponseSchema = schemaOf<MultipartInitiateResponse>({
  type: 'object',
  properties: { uploadId: { type: 'string' }, path: { type: 'string', description: 'The file the upload becomes.' } },
});

export const multipartUploadPartResponseSchema = schemaOf<MultipartUploadPartResponse>({ type: 'object', properties: partFields });

export const uploadedPartSchema = schemaOf<UploadedPart>({
  type: 'object',
  properties: { ...partFields, uploadedAt: { type: 'string', format: 'date-time' } },
});

export const multipartCompleteRequestSchema = schemaOf<MultipartCompleteRequest>({
  type: 'object',
  properties: {
    parts: {
      type: 'array',
      description: 'The parts the file is made of, each with the etag its upload answered; assembled in part-number order.',
      items: { type: 'object', properties: { partNumber, etag } },
    },
  },
});

export const multipartListPartsResponseSchema = schemaOf<MultipartListPartsResponse>({
  type: 'object',
  properties: { uploadId: { type: 'string' }, parts: { type: 'array', items: uploadedPartRef } },
});

export const multipartUploadSchema = schemaOf<MultipartUpload>({
  type: 'object',
  properties: {
    uploadId: { type: 'string' },
    path: { type: 'string' },
    permissions: { type: 'integer', description: 'The finished file\'s mode, as a number (420 is 0644).' },
    initiatedAt: { type: 'string', format: 'date-time' },
    parts: { type: 'object', additionalProperties: uploadedPartRef, description: 'The parts uploaded so far, by part number.' },
  },
});

export const multipartListUploadsResponseSchema = schemaOf<MultipartListUploadsResponse>({
  type: 'object',
  properties: { uploads: { type: 'array', items: { $ref: '#/components/schemas/MultipartUpload' } } },
});
