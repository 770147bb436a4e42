import { isBuiltinImage, isRegistryImage } from './builtin';
import { ImageReferenceError, parseImageReference } from './reference';
import { parseWorkspaceImage, type WorkspaceImageName } from './workspace-image';

/** The instructions a build takes: those a build from files of its context and images the platform can reach needs. */
export const SUPPORTED_INSTRUCTIONS = ['FROM', 'RUN', 'COPY', 'ADD', 'ENV', 'WORKDIR', 'USER', 'ARG', 'LABEL', 'EXPOSE', 'ENTRYPOINT', 'CMD'] as const;

export interface DockerfileInstruction {
  /** 1-based line where the instruction starts. */
  line: number;
  /** Upper case. */
  keyword: string;
  /** The rest of the instruction, its continuation lines joined. */
  args: string;
}

/** What a FROM builds on: an earlier stage, nothing (`scratch`), an image of the workspace, or one of a registry. */
export type BaseImage =
  | { kind: 'stage' | 'scratch'; line: number; reference: string }
  | { kind: 'workspace'; line: number; reference: string; image: WorkspaceImageName }
  | { kind: 'registry'; line: number; reference: string };

export interface ParsedDockerfile {
  instructions: DockerfileInstruction[];
  bases: BaseImage[];
}

/** A Dockerfile the platform does not build; the message names the line and what is wrong. */
export class DockerfileError extends Error {
  constructor(
    readonly line: number,
    reason: string,
  ) {
    super(`Dockerfile line ${line}: ${reason}`);
    this.name = 'DockerfileError';
  }
}

/** Instructions with their continuation lines (`\` at a line's end) joined; comments and blank lines dropped. */
export function splitInstructions(text: string): DockerfileInstruction[] {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  const instructions: DockerfileInstruction[] = [];
  let current: { line: number; text: string } | undefined;
  lines.forEach((raw, index) => {
    const trimmed = raw.trim();
    // Comments and blank lines are dropped, even between continuation lines, as Docker's parser does.
    if (trimmed === '' || trimmed.startsWith('#')) return;
    const continued = /\\\s*$/.test(raw);
    const piece = continued ? raw.replace(/\\\s*$/, '') : raw;
    if (current) current.text += piece;
    else current = { line: index + 1, text: piece };
    if (!continued) {
      instructions.push(toInstruction(current));
      current = undefined;
    }
  });
  if (current) instructions.push(toInstruction(current));
  return instructions;
}

function toInstruction({ line, text }: { line: number; text: string }): DockerfileInstruction {
  const match = /^\s*(\S+)\s*([\s\S]*)$/.exec(text)!;
  return { line, keyword: match[1].toUpperCase(), args: match[2].trim() };
}

/**
 * Reads a Dockerfile and checks it against what the platform builds: supported instructions only,
 * a FROM first (after ARGs), bases it can reach, ADD and COPY from the context only (no URL, no
 * other image). Throws a DockerfileError naming the first problem's line.
 */
export function parseDockerfile(text: string): ParsedDockerfile {
  const instructions = splitInstructions(text);
  const stages = new Set<string>();
  const bases: BaseImage[] = [];
  for (const instruction of instructions) {
    const { line, keyword, args } = instruction;
    if (!(SUPPORTED_INSTRUCTIONS as readonly string[]).includes(keyword)) {
      throw new DockerfileError(line, `the instruction ${keyword} is not supported; supported: ${SUPPORTED_INSTRUCTIONS.join(', ')}`);
    }
    if (args === '') throw new DockerfileError(line, `${keyword} needs arguments`);
    if (keyword === 'FROM') {
      const base = baseImage(line, args, stages);
      bases.push(base.base);
      if (base.stage) stages.add(base.stage);
    } else if (bases.length === 0 && keyword !== 'ARG') {
      throw new DockerfileError(line, `${keyword} before any FROM; a Dockerfile starts with FROM (only ARG may come before it)`);
    }
    if (keyword === 'COPY' || keyword === 'ADD') checkSources(line, keyword, args, stages);
  }
  if (bases.length === 0) throw new DockerfileError(Math.max(1, instructions.length), 'no FROM: a Dockerfile names the image it builds on');
  return { instructions, bases };
}

function baseImage(line: number, args: string, stages: Set<string>): { base: BaseImage; stage?: string } {
  const words = args.split(/\s+/).filter((word) => !word.startsWith('--'));
  const [reference, as, stage, ...rest] = words;
  if (reference === undefined) throw new DockerfileError(line, 'FROM names no image');
  if (as !== undefined && (as.toUpperCase() !== 'AS' || stage === undefined || rest.length > 0)) throw new DockerfileError(line, 'FROM takes an image and optionally AS <stage name>');
  if (reference.includes('$')) throw new DockerfileError(line, `FROM '${reference}': variables are not supported in FROM`);
  const named = stage?.toLowerCase();
  if (stages.has(reference)) return { base: { kind: 'stage', line, reference }, ...(named ? { stage: named } : {}) };
  return { base: externalBase(line, reference), ...(named ? { stage: named } : {}) };
}

function externalBase(line: number, reference: string): BaseImage {
  if (reference === 'scratch') return { kind: 'scratch', line, reference };
  if (isBuiltinImage(reference)) {
    throw new DockerfileError(line, `FROM '${reference}': a built-in image is not one a build can start from (base is the node's own folders, base-image is built by each node); use an image of the workspace or of a registry`);
  }
  try {
    parseImageReference(reference);
  } catch (err) {
    if (err instanceof ImageReferenceError) throw new DockerfileError(line, `FROM: ${err.message}`);
    throw err;
  }
  if (isRegistryImage(reference)) return { kind: 'registry', line, reference };
  const image = parseWorkspaceImage(reference);
  if (!image) throw new DockerfileError(line, `FROM '${reference}' names neither an image of the workspace (name[:tag]) nor one of a registry named with its host (registry.example.com/team/image:tag)`);
  return { kind: 'workspace', line, reference, image };
}

function checkSources(line: number, keyword: string, args: string, stages: Set<string>): void {
  const words = args.startsWith('[') ? [] : args.split(/\s+/);
  for (const flag of words.filter((word) => word.startsWith('--'))) {
    const from = /^--from=(.*)$/.exec(flag);
    if (from && !stages.has(from[1].toLowerCase())) throw new DockerfileError(line, `${keyword} ${flag}: copies come from the context or an earlier stage of this Dockerfile`);
  }
  const sources = args.startsWith('[') ? jsonSources(line, keyword, args) : words.filter((word) => !word.startsWith('--')).slice(0, -1);
  if (keyword === 'ADD' && sources.some((source) => /^[a-z][a-z0-9+.-]*:\/\//i.test(source) || source.startsWith('git@'))) {
    throw new DockerfileError(line, 'ADD takes files of the build context only; URLs are not fetched (a build has no internet)');
  }
}

function jsonSources(line: number, keyword: string, args: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    throw new DockerfileError(line, `${keyword} in JSON form is not a JSON array of strings`);
  }
  if (!Array.isArray(parsed) || !parsed.every((item) => typeof item === 'string')) throw new DockerfileError(line, `${keyword} in JSON form is not a JSON array of strings`);
  return (parsed as string[]).slice(0, -1);
}

/**
 * The Dockerfile the builder runs: the same instructions one to a line, each FROM that names an
 * image outside the Dockerfile pointing at the node's own copy of it (`bases`: reference ->
 * what the builder reads, `oci:<layout>:<tag>`), so the build never asks a registry.
 */
export function rewriteDockerfile(parsed: ParsedDockerfile, bases: Map<string, string>): string {
  return `${parsed.instructions
    .map(({ keyword, args }) => {
      if (keyword !== 'FROM') return `${keyword} ${args}`;
      const words = args.split(/\s+/);
      const at = words.findIndex((word) => !word.startsWith('--'));
      const local = bases.get(words[at]);
      if (local !== undefined) words[at] = local;
      return `FROM ${words.join(' ')}`;
    })
    .join('\n')}\n`;
}
