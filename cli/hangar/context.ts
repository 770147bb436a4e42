/** What a command gets from the entry point: its arguments, the environment and where to write. */
export interface CommandContext {
  argv: string[];
  env: NodeJS.ProcessEnv;
  out: (text: string) => void;
  err: (text: string) => void;
}
