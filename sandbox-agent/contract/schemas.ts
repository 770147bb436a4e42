import { directorySchema, directoryTreeSchema, fileContentSchema, fileInfoSchema, fileWriteSchema, pathMessageSchema } from './filesystem';
import { pidMessageSchema, portForwardRequestSchema, portForwardSchema, portMonitorRequestSchema, processPortsSchema } from './network';
import { processLogsSchema, processRecordSchema, processRequestSchema } from './process';
import type { AnySchema } from './schema';
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
  ProcessPorts: processPortsSchema,
  PortMonitorRequest: portMonitorRequestSchema,
  PidMessage: pidMessageSchema,
  PortForwardRequest: portForwardRequestSchema,
  PortForward: portForwardSchema,
  TerminalMessage: terminalMessageSchema,
} satisfies Record<string, AnySchema>;

export type SchemaName = keyof typeof AGENT_SCHEMAS;
