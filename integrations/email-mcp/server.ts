import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { createServer, type Server } from 'node:http';
import { z } from 'zod';
import type { OAuthProviderEndpoints } from '../../domain/config';
import { EMAIL_MCP_ENV } from '../../domain/integrations/catalog';
import { emailProblem, type OutgoingEmail } from '../../domain/integrations/email-message';
import { mcpHttpHandler } from '../mcp-http';
import { RefreshingAccessToken } from '../oauth/refreshing-token';
import { MailApi } from './mail-api';

export interface EmailMcpOptions {
  /** The connection's secrets: CLIENT_ID, CLIENT_SECRET, REFRESH_TOKEN. */
  secrets: Record<string, string>;
  provider: OAuthProviderEndpoints;
  /** Clock for token expiry (tests). */
  now?: () => number;
}

const SERVER_INFO = { name: 'hangar-email', version: '1.0.0' };

const Addresses = z.union([z.string(), z.array(z.string()).max(100)]);
const toList = (value: string | string[] | undefined) => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

const failure = (message: string) => ({ isError: true, content: [{ type: 'text' as const, text: message }] });

function emailTools(server: McpServer, api: MailApi): McpServer {
  server.registerTool(
    'send_email',
    {
      title: 'Send email',
      description: 'Sends a plain-text email from the connected account.',
      inputSchema: {
        to: Addresses.describe('Recipient address, or a list of them.'),
        cc: Addresses.optional(),
        bcc: Addresses.optional(),
        subject: z.string().max(998),
        body: z.string().max(1_000_000).describe('Plain-text body.'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    async (args) => {
      const email: OutgoingEmail = { to: toList(args.to), cc: toList(args.cc), bcc: toList(args.bcc), subject: args.subject, text: args.body };
      const problem = emailProblem(email);
      if (problem) return failure(`invalid email: ${problem}`);
      try {
        const sent = await api.send(email);
        return { content: [{ type: 'text' as const, text: `sent message ${sent.id} to ${email.to.join(', ')}` }] };
      } catch (err) {
        return failure(`sending failed: ${(err as Error).message}`);
      }
    },
  );
  server.registerTool(
    'whoami',
    {
      title: 'Connected account',
      description: 'Tells which account this server sends email as.',
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    async () => {
      try {
        const me = await api.whoami();
        return { content: [{ type: 'text' as const, text: JSON.stringify({ email: me.email, name: me.name, sub: me.sub }) }] };
      } catch (err) {
        return failure(`lookup failed: ${(err as Error).message}`);
      }
    },
  );
  return server;
}

/**
 * The options of a hosted instance from its environment: what the catalog's `mcp.environment`
 * builds from the bound connection (CLIENT_ID, CLIENT_SECRET, REFRESH_TOKEN, provider endpoints).
 */
export function emailMcpOptionsFromEnv(env: NodeJS.ProcessEnv): EmailMcpOptions {
  const provider = Object.fromEntries(
    Object.entries(EMAIL_MCP_ENV).map(([key, variable]) => {
      const value = env[variable];
      if (!value) throw new Error(`${variable} is not set`);
      return [key, value];
    }),
  ) as unknown as OAuthProviderEndpoints;
  return { secrets: { CLIENT_ID: env.CLIENT_ID ?? '', CLIENT_SECRET: env.CLIENT_SECRET ?? '', REFRESH_TOKEN: env.REFRESH_TOKEN ?? '' }, provider };
}

/**
 * The email integration's MCP server: `send_email` and `whoami` at /mcp (streamable HTTP),
 * `/health` for the runtime. One access token, refreshed from the connection's refresh token,
 * is shared by every session. Returns an HTTP server that is not yet listening.
 */
export function createEmailMcpServer(options: EmailMcpOptions): Server {
  const { secrets, provider } = options;
  for (const key of ['CLIENT_ID', 'CLIENT_SECRET', 'REFRESH_TOKEN']) {
    if (!secrets[key]) throw new Error(`the email MCP server needs ${key}`);
  }
  const token = new RefreshingAccessToken(
    { tokenUrl: provider.tokenUrl, clientId: secrets.CLIENT_ID, clientSecret: secrets.CLIENT_SECRET, refreshToken: secrets.REFRESH_TOKEN },
    options.now,
  );
  const api = new MailApi(provider, token);
  const mcp = mcpHttpHandler(() => emailTools(new McpServer(SERVER_INFO), api));
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/mcp') {
      mcp.handle(req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'internal error' }, id: null }));
      });
    } else if (path === '/health') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'ok' }));
    } else {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `no route for ${req.method} ${path}` }));
    }
  });
  server.on('close', () => void mcp.close());
  return server;
}
