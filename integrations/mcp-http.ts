import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

const MAX_BODY_BYTES = 4 * 1024 * 1024;
const SESSION_IDLE_MS = 30 * 60_000;

/**
 * MCP over streamable HTTP with sessions (the protocol @modelcontextprotocol/sdk 1.x speaks):
 * an initialize POST opens a session with its own server instance, later requests name it in
 * Mcp-Session-Id, DELETE or half an hour of silence ends it. The transport lives here only, so
 * moving to the session-less revision of the protocol touches one file.
 */
export function mcpHttpHandler(newServer: () => McpServer) {
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; lastSeen: number }>();
  const sweeper = setInterval(() => {
    const cutoff = Date.now() - SESSION_IDLE_MS;
    for (const session of sessions.values()) if (session.lastSeen < cutoff) void session.transport.close();
  }, 60_000);
  sweeper.unref();

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const header = req.headers['mcp-session-id'];
    const sessionId = Array.isArray(header) ? header[0] : header;
    if (sessionId) {
      const session = sessions.get(sessionId);
      if (!session) return rpcError(res, 404, 'unknown or expired session: initialize a new one');
      session.lastSeen = Date.now();
      return session.transport.handleRequest(req, res);
    }
    if (req.method !== 'POST') return rpcError(res, 400, 'no Mcp-Session-Id: initialize a session first');
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch (err) {
      return rpcError(res, 400, (err as Error).message === 'too large' ? 'request body too large' : 'the body is not valid JSON', -32700);
    }
    if (!isInitializeRequest(body)) return rpcError(res, 400, 'no Mcp-Session-Id: initialize a session first');
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, lastSeen: Date.now() });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await newServer().connect(transport);
    await transport.handleRequest(req, res, body);
  }

  async function close(): Promise<void> {
    clearInterval(sweeper);
    await Promise.allSettled([...sessions.values()].map((session) => session.transport.close()));
  }

  return { handle, close };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error('too large'));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function rpcError(res: ServerResponse, status: number, message: string, code = -32000): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}
