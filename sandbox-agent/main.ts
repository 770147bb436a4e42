import fs from 'node:fs';
import { loadAgentConfig } from './contract/agent-config';
import { createAgentServer } from './server';

/**
 * Entry point of the agent inside a sandbox. Runs as the sandbox user, with no capabilities,
 * and serves the sandbox API on a Unix socket in the folder the host shares with the sandbox.
 */
function main(): void {
  const file = process.env.HANGAR_AGENT_CONFIG ?? '/etc/hangar/agent.json';
  const config = loadAgentConfig(file);
  const server = createAgentServer(() => loadAgentConfig(file));
  fs.rmSync(config.socketPath, { force: true });
  server.listen(config.socketPath);
  server.on('error', (err) => {
    process.stderr.write(`sandbox api: cannot serve on ${config.socketPath}: ${err.message}\n`);
    process.exit(1);
  });
  // One failed request must not take the user's processes down with the agent.
  process.on('uncaughtException', (err) => process.stderr.write(`sandbox api: uncaught: ${err.stack ?? err.message}\n`));
  process.on('unhandledRejection', (err) => process.stderr.write(`sandbox api: unhandled: ${(err as Error)?.stack ?? String(err)}\n`));
}

main();
