// A Hangar MCP server: MCP over streamable HTTP at $HOST:$PORT/mcp, with the official SDK (the
// platform puts its copy on NODE_PATH; a bundle may also ship its own node_modules). Tools:
// `add` (two numbers) and `word_count` (a text). Sessions are kept per Mcp-Session-Id.
const http = require('node:http');
const { randomUUID, webcrypto } = require('node:crypto');
// The SDK uses the global Web Crypto, which Node 18 (base-image's, Debian 12's) does not define by default.
globalThis.crypto ??= webcrypto;
const { McpServer } = require('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = require('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { isInitializeRequest } = require('@modelcontextprotocol/sdk/types.js');
const { z } = require('zod');

function buildServer() {
  const server = new McpServer({ name: process.env.HANGAR_RESOURCE_NAME || 'calc', version: '1.0.0' });
  server.registerTool('add', { description: 'Add two numbers.', inputSchema: { a: z.number(), b: z.number() } }, ({ a, b }) => ({
    content: [{ type: 'text', text: String(a + b) }],
  }));
  server.registerTool('word_count', { description: 'Count the words of a text.', inputSchema: { text: z.string() } }, ({ text }) => ({
    content: [{ type: 'text', text: String(text.split(/\s+/).filter(Boolean).length) }],
  }));
  return server;
}

const sessions = new Map();

function sendJson(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function readJson(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch (err) {
        reject(err);
      }
    });
    req.on('error', reject);
  });
}

async function handle(req, res) {
  if (req.url.split('?')[0] !== '/mcp') return sendJson(res, 404, { error: 'MCP lives at /mcp' });
  const sessionId = req.headers['mcp-session-id'];
  if (typeof sessionId === 'string') {
    const transport = sessions.get(sessionId);
    if (!transport) return sendJson(res, 404, { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null });
    return transport.handleRequest(req, res);
  }
  if (req.method !== 'POST') return sendJson(res, 400, { jsonrpc: '2.0', error: { code: -32000, message: 'start a session with an initialize request' }, id: null });
  const body = await readJson(req);
  if (!isInitializeRequest(body)) return sendJson(res, 400, { jsonrpc: '2.0', error: { code: -32000, message: 'start a session with an initialize request' }, id: null });
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, transport),
  });
  transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
  await buildServer().connect(transport);
  await transport.handleRequest(req, res, body);
}

http
  .createServer((req, res) => handle(req, res).catch((err) => (res.headersSent ? res.destroy() : sendJson(res, 500, { error: err.message }))))
  .listen(Number(process.env.PORT || 8000), process.env.HOST || '127.0.0.1');
