import { createEmailMcpServer, emailMcpOptionsFromEnv } from './server';

/**
 * Entry point of a hosted email MCP server: configured by its environment (see
 * `emailMcpOptionsFromEnv`), listening on PORT and HOST, the runtime contract of hosted workloads.
 */
function main() {
  const server = createEmailMcpServer(emailMcpOptionsFromEnv(process.env));
  const port = Number(process.env.PORT || 8080);
  const host = process.env.HOST || '0.0.0.0';
  server.listen(port, host, () => console.log(`email MCP server listening on http://${host}:${port}/mcp`));
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

try {
  main();
} catch (err) {
  console.error(`email MCP server failed: ${(err as Error).message}`);
  process.exit(1);
}
