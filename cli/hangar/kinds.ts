import { UsageError } from './errors';

/** A kind of resource as the CLI names it and the API serves it. */
export interface CliKind {
  /** The name shown in messages and accepted on the command line (with its aliases). */
  name: string;
  aliases: string[];
  /** The API path under /v0. */
  path: string;
  /** The `kind` of an apply manifest that creates this kind, when apply supports it. */
  manifestKind?: string;
  /** Nodes are listed only: they belong to the platform, not to a workspace. */
  listOnly?: boolean;
}

export const KINDS: readonly CliKind[] = [
  { name: 'sandboxes', aliases: ['sandbox', 'sbx'], path: 'sandboxes', manifestKind: 'Sandbox' },
  { name: 'agents', aliases: ['agent'], path: 'agents', manifestKind: 'Agent' },
  { name: 'functions', aliases: ['function', 'mcp', 'mcpservers', 'mcp-servers'], path: 'functions', manifestKind: 'Function' },
  { name: 'models', aliases: ['model'], path: 'models', manifestKind: 'Model' },
  { name: 'jobs', aliases: ['job'], path: 'jobs', manifestKind: 'Job' },
  { name: 'volumes', aliases: ['volume'], path: 'volumes', manifestKind: 'Volume' },
  { name: 'images', aliases: ['image'], path: 'images' },
  { name: 'snapshots', aliases: ['snapshot'], path: 'snapshots' },
  { name: 'customdomains', aliases: ['customdomain', 'custom-domains', 'custom-domain', 'domains', 'domain'], path: 'customdomains', manifestKind: 'CustomDomain' },
  {
    name: 'connections',
    aliases: ['connection', 'integration-connections', 'integrationconnections'],
    path: 'integrations/connections',
    manifestKind: 'IntegrationConnection',
  },
  { name: 'nodes', aliases: ['node'], path: 'nodes', listOnly: true },
];

export function findKind(word: string | undefined): CliKind {
  const lower = (word ?? '').toLowerCase();
  const kind = KINDS.find((k) => k.name === lower || k.aliases.includes(lower));
  if (!kind) throw new UsageError(`${word ? `unknown kind '${word}'` : 'a kind is required'}: one of ${KINDS.map((k) => k.name).join(', ')}`);
  return kind;
}

/** The kind a manifest's `kind` field names (case-insensitive, singular or plural). */
export function findManifestKind(word: unknown, where: string): CliKind {
  const lower = String(word ?? '').toLowerCase();
  const kind = KINDS.find((k) => k.manifestKind && (k.manifestKind.toLowerCase() === lower || k.name === lower || k.aliases.includes(lower)));
  if (!kind) {
    const known = KINDS.filter((k) => k.manifestKind).map((k) => k.manifestKind);
    throw new UsageError(`${where}: kind ${word === undefined ? 'is required' : `'${String(word)}' cannot be applied`} (one of ${known.join(', ')})`);
  }
  return kind;
}
