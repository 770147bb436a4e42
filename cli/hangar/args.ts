import { UsageError } from './errors';

/** A command line split into positional words and `--flag value` options (`--` ends the options). */
export interface ParsedArgs {
  positional: string[];
  options: Map<string, string>;
  /** The words after `--`, as given. */
  rest: string[];
}

/** Options that take no value. */
const SWITCHES = new Set(['help']);

export function parseArgs(argv: string[], known: readonly string[]): ParsedArgs {
  const positional: string[] = [];
  const options = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i];
    if (word === '--') return { positional, options, rest: argv.slice(i + 1) };
    if (!word.startsWith('-') || word === '-') {
      positional.push(word);
      continue;
    }
    const [flag, inline] = word.replace(/^--?/, '').split(/=(.*)/s, 2);
    const name = flag === 'o' ? 'output' : flag === 'f' ? 'file' : flag;
    if (!known.includes(name)) throw new UsageError(`unknown option '${word}' (options here: ${known.map((k) => `--${k}`).join(', ') || 'none'})`);
    if (SWITCHES.has(name)) {
      options.set(name, 'true');
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw new UsageError(`option --${name} needs a value`);
    options.set(name, value);
  }
  return { positional, options, rest: [] };
}

/** The value of an option restricted to a few choices; a value outside them is a usage error. */
export function choice<T extends string>(args: ParsedArgs, name: string, choices: readonly T[], fallback: T): T {
  const value = args.options.get(name) ?? fallback;
  if (!choices.includes(value as T)) throw new UsageError(`--${name} must be one of ${choices.join(', ')} (got '${value}')`);
  return value as T;
}
