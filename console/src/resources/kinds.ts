/** A resource as the management API lists it: `{metadata, spec, status, events}` and a kind's extras. */
export interface Resource {
  metadata: { name: string; workspace: string; createdAt: string; updatedAt: string; url?: string };
  spec: Record<string, unknown>;
  status?: string;
  events?: { type: string; status: string; message: string; time: string }[];
  state?: string | null;
  lastUsedAt?: string | null;
}

export interface ResourceKind {
  path: string;
  title: string;
  /** Where the list is (GET). */
  list: string;
  /** The id of the workflow that drives a resource of the kind, as the platform names it; none for kinds without one. */
  workflowId?: (workspace: string, name: string) => string;
}

const deployment = (kind: string) => (workspace: string, name: string) => `deploy/${workspace}/${kind}/${name}`;

export const KINDS: ResourceKind[] = [
  { path: 'sandboxes', title: 'Sandboxes', list: '/v0/sandboxes', workflowId: (w, n) => `sandbox/${w}/${n}` },
  { path: 'agents', title: 'Agents', list: '/v0/agents', workflowId: deployment('agents') },
  { path: 'functions', title: 'MCP servers', list: '/v0/functions', workflowId: deployment('functions') },
  { path: 'models', title: 'Models', list: '/v0/models', workflowId: deployment('models') },
  { path: 'jobs', title: 'Jobs', list: '/v0/jobs', workflowId: deployment('jobs') },
  { path: 'volumes', title: 'Volumes', list: '/v0/volumes', workflowId: (w, n) => `volume/${w}/${n}` },
  { path: 'customdomains', title: 'Custom domains', list: '/v0/customdomains', workflowId: (w, n) => `customdomain/${w}/${n}` },
  { path: 'connections', title: 'Integration connections', list: '/v0/integrations/connections' },
];

/** "3 h", "2 d": how long ago, for ages and last uses. */
export function ago(time: string | null | undefined, now = Date.now()): string {
  if (!time) return 'never';
  const seconds = Math.max(0, Math.round((now - Date.parse(time)) / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86_400)} d ago`;
}
