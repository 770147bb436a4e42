import fs from 'node:fs';

/**
 * What the host tells the agent at start, in one JSON file (read-only inside the sandbox). The
 * user's environment variables travel here rather than in the agent's own environment, so that
 * a variable such as NODE_OPTIONS reaches the user's processes but never changes the agent.
 */
export interface AgentConfig {
  sandboxId: string;
  /** What port callbacks call the sandbox. */
  sandboxName: string;
  workspaceId: string;
  socketPath: string;
  /** Append-only log of detected ports, read and delivered by the host. */
  eventLog: string;
  /** Environment of every process the API starts (before the request's own `env`). */
  processEnv: Record<string, string>;
  defaultWorkingDir: string;
  /** Folders the filesystem API may write below. */
  writableRoots: string[];
  /** Folders the filesystem API never reads or lists (kernel views, the agent's own files). */
  hiddenRoots: string[];
}

export const AGENT_VERSION = '0.1.0';

export function loadAgentConfig(file: string): AgentConfig {
  const config = JSON.parse(fs.readFileSync(file, 'utf8')) as AgentConfig;
  for (const key of ['sandboxId', 'socketPath', 'eventLog', 'defaultWorkingDir'] as const) {
    if (typeof config[key] !== 'string' || !config[key]) throw new Error(`agent config ${file}: '${key}' is missing`);
  }
  return config;
}
