/** What a command gets from the entry point: its arguments, the environment and where to write. */
export interface CommandContext {
  argv: string[];
  env: NodeJS.ProcessEnv;
  out: (text: string) => void;
  err: (text: string) => void;
  /** Whether stderr is a terminal (progress is then drawn as a bar), and its width. */
  errIsTty?: boolean;
  columns?: number;
}
