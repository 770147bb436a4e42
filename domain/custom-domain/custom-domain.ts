import { isIP } from 'node:net';
import type { UsageTick } from '../billing/metering';

/** The workloads a custom domain can serve, as `spec.target.kind`, and the kind (path) each routes to. */
export const CUSTOM_DOMAIN_TARGETS = { agent: 'agents', model: 'models', function: 'functions' } as const;
export type CustomDomainTargetKind = keyof typeof CUSTOM_DOMAIN_TARGETS;

/** spec of a custom domain resource. */
export interface CustomDomainSpec {
  /** Lowercase DNS name, unique platform-wide: requests whose Host is this go to the target. */
  domain: string;
  target: { kind: CustomDomainTargetKind; name: string };
}

/** Identifies one custom domain everywhere: the resource row and its workflow. */
export interface CustomDomainKey {
  /** The resource's uuid. */
  id: string;
  workspace: string;
  workspaceId: string;
  name: string;
}

export const MAX_DOMAIN_LENGTH = 253;
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Explains why `value` is not a host name a custom domain can claim, naming the field, or returns
 * undefined when it is one: a lowercase DNS name of at least two labels, without a port, a
 * trailing dot or a scheme, and no IP address (those reach the gateway without any domain).
 */
export function domainProblem(field: string, value: string): string | undefined {
  const bare = value.startsWith('[') && value.endsWith(']') ? value.slice(1, -1) : value;
  if (isIP(bare)) return `${field} '${value}' is an IP address; give a DNS name`;
  if (value.includes('://') || value.includes('/')) return `${field} '${value}' must be a bare host name, without scheme or path`;
  if (/:\d*$/.test(value)) return `${field} '${value}' must not carry a port`;
  if (value !== value.toLowerCase()) return `${field} '${value}' must be lowercase`;
  if (value.length > MAX_DOMAIN_LENGTH) return `${field} must be at most ${MAX_DOMAIN_LENGTH} characters`;
  if (value.endsWith('.')) return `${field} '${value}' must not end with a dot`;
  const labels = value.split('.');
  if (labels.length < 2) return `${field} '${value}' must be a fully qualified name with at least two labels, like 'api.example.com'`;
  if (!labels.every((label) => LABEL.test(label))) {
    return `${field} '${value}' is not a DNS name: labels of 1 to 63 lowercase letters, digits and '-', not starting or ending with '-'`;
  }
  // A numeric top-level label would make it look like (and be resolved as) an IPv4 address.
  if (/^[0-9]+$/.test(labels[labels.length - 1])) return `${field} '${value}' is not a DNS name: its last label is numeric`;
  return undefined;
}

/** The host a request names (Host header, port stripped, case folded), as custom domains are stored. */
export function requestHost(hostHeader: string | undefined): string {
  if (!hostHeader) return '';
  const host = hostHeader.startsWith('[') ? hostHeader.slice(0, hostHeader.indexOf(']') + 1) : hostHeader.replace(/:\d*$/, '');
  return host.toLowerCase();
}

/** How gateways name the route of a host (and how a change of domain names the entry to drop). */
export function customDomainRouteKey(domain: string): string {
  return `domain/${domain}`;
}

export function customDomainWorkflowId(workspace: string, name: string): string {
  return `customdomain/${workspace}/${name}`;
}

export interface CustomDomainMeterPeriod {
  key: CustomDomainKey;
  accountId: string;
  /** Period [from, to), epoch milliseconds. */
  from: number;
  to: number;
}

/** A custom domain is billed for the hours it exists, whatever traffic it serves. */
export function customDomainUsageTicks(period: CustomDomainMeterPeriod): UsageTick[] {
  const hours = Math.round((Math.max(0, period.to - period.from) / 3_600_000) * 1e6) / 1e6;
  if (hours <= 0) return [];
  return [
    {
      accountId: period.accountId,
      workspace: period.key.workspace,
      resourceType: 'custom_domain',
      resourceName: period.key.name,
      resourceUuid: period.key.id,
      billingDimension: 'custom_domain_active_time_hours',
      quantity: hours,
      periodStart: new Date(period.from),
    },
  ];
}

/**
 * The path a request to a custom domain takes to its target, as the run_url routes expose it: an
 * agent only at its root, a model at any path, a function under `/mcp`. Undefined when the
 * target serves no such path.
 */
export function domainUpstreamPath(kind: CustomDomainTargetKind, path: string): string | undefined {
  if (kind === 'agent') return path === '/' ? '/' : undefined;
  if (kind === 'function') return path === '/mcp' || path.startsWith('/mcp/') ? path : undefined;
  return path;
}
