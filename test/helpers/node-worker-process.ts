import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { HangarConfig } from '../../domain/config';
import { typescriptRegister } from './typescript-child';

/** A node worker in a process of its own, and what it printed. */
export interface NodeWorkerProcess {
  process: ChildProcess;
  output(): string;
  /** SIGKILL to its whole group: skopeo and tar die with it, as on a crash of its host. */
  kill(): void;
}

/**
 * The node worker of `config`'s node in a process of its own (and group), as workers/node.ts
 * would run it, with the tests' runtime on `config.dataDir`; `scratch` holds the module that
 * loads the project's TypeScript. Tests kill it to kill a node mid-step.
 */
export function nodeWorkerProcess(config: HangarConfig, scratch: string): NodeWorkerProcess {
  const register = typescriptRegister(scratch);
  const script = `
    const { startNodeWorker } = require(${JSON.stringify(path.resolve('test/helpers/workers.ts'))});
    const { testRuntime } = require(${JSON.stringify(path.resolve('test/helpers/sandbox-runtime.ts'))});
    const config = JSON.parse(process.env.HANGAR_TEST_CONFIG);
    startNodeWorker(config, testRuntime(config.dataDir)).then(() => console.log('polling'));`;
  const started = spawn(process.execPath, ['-r', register, '-e', script], { cwd: process.cwd(), detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HANGAR_TEST_CONFIG: JSON.stringify(config) } });
  let output = '';
  started.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  started.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return {
    process: started,
    output: () => output,
    kill: () => {
      if (started.exitCode === null && started.signalCode === null) process.kill(-started.pid!, 'SIGKILL');
    },
  };
}
