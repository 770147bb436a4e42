import { directorySchema, directoryTreeSchema, fileContentSchema, fileInfoSchema, fileWriteSchema, pathMessageSchema, treeRequestSchema } from './filesystem';
import * as multipartUpload from './multipart-upload';
import { pidMessageSchema, portForwardRequestSchema, portForwardSchema, portMonitorRequestSchema, processPortsSchema } from './network';
import { processLogsSchema, processRecordSchema, processRequestSchema, stdinMessageSchema } from './process';
import type { AnySchema } from './schema';
import { contentSearchMatchSchema, contentSearchResponseSchema, fileEventSchema, findMatchSchema, findResponseSchema, fuzzySearchMatchSchema, fuzzySearchResponseSchema } from './search';
import { terminalMessageSchema } from './terminal';
import { agentActivitySchema, agentErrorSchema, agentHealthSchema, agentIndexSchema, agentReloadSchema } from './service';

/**
 * Every named schema of the sandbox API: the route table names its bodies and answers by these
 * names, and the OpenAPI document lists them under `components.schemas`.
 */
export const AGENT_SCHEMAS = {
  ErrorResponse: agentErrorSchema,
  Health: agentHealthSchema,
  ApiIndex: agentIndexSchema,
  Activity: agentActivitySchema,
  Reload: agentReloadSchema,
  FileInfo: fileInfoSchema,
  FileContent: fileContentSchema,
  Directory: directorySchema,
  DirectoryTree: directoryTreeSchema,
  FileWrite: fileWriteSchema,
  PathMessage: pathMessageSchema,
  ProcessRequest: processRequestSchema,
  Process: processRecordSchema,
  ProcessLogs: processLogsSchema,
  StdinMessage: stdinMessageSchema,
  ProcessPorts: processPortsSchema,
  PortMonitorRequest: portMonitorRequestSchema,
  PidMessage: pidMessageSchema,
  PortForwardRequest: portForwardRequestSchema,
  PortForward: portForwardSchema,
  // Multipart upload and file trees.
  TreeRequest: treeRequestSchema,
  MultipartInitiateRequest: multipartUpload.multipartInitiateRequestSchema,
  MultipartInitiateResponse: multipartUpload.multipartInitiateResponseSchema,
  MultipartUploadPartResponse: multipartUpload.multipartUploadPartResponseSchema,
  UploadedPart: multipartUpload.uploadedPartSchema,
  MultipartCompleteRequest: multipartUpload.multipartCompleteRequestSchema,
  MultipartListPartsResponse: multipartUpload.multipartListPartsResponseSchema,
  MultipartUpload: multipartUpload.multipartUploadSchema,
  MultipartListUploadsResponse: multipartUpload.multipartListUploadsResponseSchema,
  // Find, search and watch.
  FindMatch: findMatchSchema,
  FindResponse: findResponseSchema,
  FuzzySearchMatch: fuzzySearchMatchSchema,
  FuzzySearchResponse: fuzzySearchResponseSchema,
  ContentSearchMatch: contentSearchMatchSchema,
  ContentSearchResponse: contentSearchResponseSchema,
  FileEvent: fileEventSchema,
  // The terminal.
  TerminalMessage: terminalMessageSchema,
} satisfies Record<string, AnySchema>;

export type SchemaName = keyof typeof AGENT_SCHEMAS;
