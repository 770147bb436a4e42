import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { AGENT_VERSION } from './contract/agent-config';
import type { SandboxFiles } from './filesystem';
import { TREE_DEFAULT_DEPTH, TREE_DEFAULT_ENTRIES, TREE_MAX_DEPTH } from './contract/limits';
import { HttpError, readJsonObject, sendJson } from './http';
import { parseProcessRequest, type ProcessManager } from './process-manager';

/**
 * The sandbox's MCP endpoint (streamable HTTP, session-based as SDK 1.x speaks it). Loaded on
 * the first /mcp request only: the SDK and zod would triple the agent's start time otherwise.
 * The tools call the same code as the REST API, so both behave the same.
 */
export interface McpDeps {
  files: SandboxFiles;
  processes: ProcessManager;
}

const MAX_SESSIONS = 32;

export function createMcpHandler(deps: McpDeps) {
  const sessions = new Map<string, StreamableHTTPServerTransport>();

  return async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const transport = sessions.get(sessionId);
      if (!transport) return sendJson(res, 404, { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null });
      return transport.handleRequest(req, res);
    }
    if (req.method !== 'POST') throw new HttpError(400, 'no Mcp-Session-Id: start a session with an initialize request');
    const body = await readJsonObject(req, true);
    if (!isInitializeRequest(body)) throw new HttpError(400, 'no Mcp-Session-Id: start a session with an initialize request');

    while (sessions.size >= MAX_SESSIONS) {
      const [oldestId, oldest] = sessions.entries().next().value!;
      sessions.delete(oldestId);
      await oldest.close();
    }
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await buildServer(deps).connect(transport);
    await transport.handleRequest(req, res, body);
  };
}

function buildServer({ files, processes }: McpDeps): McpServer {
  const server = new McpServer({ name: 'hangar-sandbox', version: AGENT_VERSION });
  registerFileTools(server, files);
  registerProcessTools(server, processes);
  return server;
}

/** files_list, files_read, files_write, files_edit, files_delete: the filesystem API's operations. */
function registerFileTools(server: McpServer, files: SandboxFiles): void {
  const path = z.string().describe('Absolute path inside the sandbox, for example /home/user/app.py');

  server.registerTool(
    'files_list',
    {
      description: 'List a directory recursively (bounded by depth and entry count).',
      inputSchema: { path, depth: z.number().int().min(1).max(TREE_MAX_DEPTH).optional() },
    },
    ({ path: asked, depth }) => run(() => files.tree(files.parse(asked), { depth: depth ?? TREE_DEFAULT_DEPTH, maxEntries: TREE_DEFAULT_ENTRIES })),
  );
  server.registerTool('files_read', { description: 'Read a text file.', inputSchema: { path } }, ({ path: asked }) =>
    run(async () => (await files.readText(files.parse(asked))).content),
  );
  server.registerTool(
    'files_write',
    { description: 'Create or overwrite a text file (parent folders are created).', inputSchema: { path, content: z.string() } },
    ({ path: asked, content }) =>
      run(async () => {
        await files.writeFile(files.parse(asked), content);
        return { path: asked, message: 'File written' };
      }),
  );
  server.registerTool(
    'files_edit',
    {
      description: 'Replace the one occurrence of oldText with newText in a text file.',
      inputSchema: { path, oldText: z.string().min(1), newText: z.string() },
    },
    ({ path: asked, oldText, newText }) =>
      run(async () => {
        await files.edit(files.parse(asked), oldText, newText);
        return { path: asked, message: 'File edited' };
      }),
  );
  server.registerTool(
    'files_delete',
    { description: 'Delete a file, or a directory (recursive: true for a non-empty one).', inputSchema: { path, recursive: z.boolean().optional() } },
    ({ path: asked, recursive }) =>
      run(async () => {
        await files.remove(files.parse(asked), recursive ?? false);
        return { path: asked, message: 'Deleted' };
      }),
  );
}

/** process_execute, _list, _get, _logs, _stop, _kill: the process API's operations. */
function registerProcessTools(server: McpServer, processes: ProcessManager): void {
  const processId = z.string().describe('The process pid or name');
  server.registerTool(
    'process_execute',
    {
      description: 'Run a shell command. By default waits for it to finish and returns its output.',
      inputSchema: {
        command: z.string().min(1),
        name: z.string().optional(),
        workingDir: z.string().optional(),
        env: z.record(z.string(), z.string()).optional(),
        waitForCompletion: z.boolean().optional().describe('Default true'),
        timeout: z.number().positive().optional().describe('Seconds before the process is killed'),
      },
    },
    (args) =>
      run(async () => {
        const request = parseProcessRequest({ ...args, waitForCompletion: args.waitForCompletion ?? true });
        const managed = await processes.start(request);
        if (request.waitForCompletion) await managed.finished;
        return managed.view();
      }),
  );
  server.registerTool('process_list', { description: 'List the processes started in this sandbox.' }, () =>
    run(async () => processes.list().map((p) => ({ ...p.view(), logs: undefined, stdout: undefined, stderr: undefined }))),
  );
  server.registerTool('process_get', { description: 'Show one process.', inputSchema: { identifier: processId } }, ({ identifier }) =>
    run(async () => processes.get(identifier).view()),
  );
  server.registerTool('process_logs', { description: "A process's output so far.", inputSchema: { identifier: processId } }, ({ identifier }) =>
    run(async () => {
      const { output } = processes.get(identifier);
      return { stdout: output.text('stdout'), stderr: output.text('stderr'), logs: output.text() };
    }),
  );
  server.registerTool('process_stop', { description: 'Stop a process gracefully (SIGTERM, then SIGKILL).', inputSchema: { identifier: processId } }, ({ identifier }) =>
    run(async () => {
      const managed = processes.get(identifier);
      await managed.stop();
      return managed.view();
    }),
  );
  server.registerTool('process_kill', { description: "Kill a process and its whole process group.", inputSchema: { identifier: processId } }, ({ identifier }) =>
    run(async () => {
      const managed = processes.get(identifier);
      await managed.kill();
      return managed.view();
    }),
  );
}

/** A tool's answer: its result as text (JSON for objects), or the error as an error result. */
async function run(work: () => Promise<unknown>): Promise<CallToolResult> {
  try {
    const result = await work();
    return { content: [{ type: 'text', text: typeof result === 'string' ? result : JSON.stringify(result, null, 2) }] };
  } catch (err) {
    const message = err instanceof HttpError ? err.message : `${(err as NodeJS.ErrnoException).code ?? 'error'}: ${(err as Error).message}`;
    return { content: [{ type: 'text', text: message }], isError: true };
  }
}
