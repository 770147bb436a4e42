import { execFileSync } from 'node:child_process';
import { parseArgs } from '../../../cli/hangar/args';
import { sinceToStart } from '../../../cli/hangar/billing';
import { readManifests } from '../../../cli/hangar/apply';
import { shellCommand } from '../../../cli/hangar/sandbox';

describe('shellCommand', () => {
  it.each([[['echo', 'hello world']], [['printf', '%s|', "it's", '$HOME', '`id`', 'a"b', '']], [['sh', '-c', 'echo "$0"', "x'y"]]])(
    'the shell receives exactly the words %j',
    (words) => {
      // A real sh splits the line back into words: what it prints as argv must be what was given.
      const echoed = execFileSync('sh', ['-c', `set -- ${shellCommand(words)}; printf '%s\\0' "$@"`], { encoding: 'utf8' });
      expect(echoed.split('\0').slice(0, -1)).toEqual(words);
    },
  );
});

describe('parseArgs', () => {
  it('splits positionals, --flag value, --flag=value, short aliases and the words after --', () => {
    const parsed = parseArgs(['exec', 'box', '-o', 'json', '--file=a=b.yaml', '--', '-x', '--output'], ['output', 'file']);
    expect(parsed.positional).toEqual(['exec', 'box']);
    expect(Object.fromEntries(parsed.options)).toEqual({ output: 'json', file: 'a=b.yaml' });
    expect(parsed.rest).toEqual(['-x', '--output']);
  });

  it('refuses an unknown option and an option without its value', () => {
    expect(() => parseArgs(['--nope'], ['output'])).toThrow("unknown option '--nope'");
    expect(() => parseArgs(['--output'], ['output'])).toThrow('option --output needs a value');
  });
});

describe('sinceToStart', () => {
  const now = new Date('2026-05-10T12:00:00Z');
  it.each([
    ['30m', '2026-05-10T11:30:00.000Z'],
    ['12h', '2026-05-10T00:00:00.000Z'],
    ['7d', '2026-05-03T12:00:00.000Z'],
    ['2w', '2026-04-26T12:00:00.000Z'],
  ])('%s', (since, start) => expect(sinceToStart(since, now).toISOString()).toBe(start));
  it.each(['0d', '7', 'd', '1.5h', '-1d', '7 d'])('refuses %j', (since) => expect(() => sinceToStart(since, now)).toThrow('--since must be a duration'));
});

describe('readManifests', () => {
  it('reads every document, skipping empty ones', () => {
    const manifests = readManifests('f.yaml', '---\nkind: Agent\nmetadata: {name: a}\nspec: {runtime: {memory: 256}}\n---\n---\nkind: mcp\nmetadata: {name: f}\n');
    expect(manifests.map((m) => [m.kind.path, m.name, m.body])).toEqual([
      ['agents', 'a', { metadata: { name: 'a' }, spec: { runtime: { memory: 256 } } }],
      ['functions', 'f', { metadata: { name: 'f' } }],
    ]);
  });

  it.each([
    ['kind: Agent\nmetadata: {name: a}\nspce: {}\n', "document 1: unknown field 'spce'"],
    ['kind: Node\nmetadata: {name: a}\n', "document 1: kind 'Node' cannot be applied"],
    ['metadata: {name: a}\n', 'document 1: kind is required'],
    ['kind: Agent\nmetadata: {name: 5}\n', 'document 1: metadata.name is required (a string)'],
    ['- a\n- b\n', 'document 1: a manifest is a mapping'],
    ['kind: Agent\nmetadata: {name: a\n', 'document 1:'],
    ['', 'no manifest in it'],
  ])('refuses %j', (text, message) => expect(() => readManifests('f.yaml', text)).toThrow(message));
});
