import { PRIVATE_RANGES, blockedRange, cidrContains, formatCidr, parseCidr, parseIp, unmapped, type CidrBlock, type IpAddress } from './ip-address';

/** Domain rules, in the reference's shape. */
export interface SandboxNetworkRules {
  allowedDomains?: string[];
  forbiddenDomains?: string[];
}

/** `spec.network` of a sandbox: rules at the top and under `proxy` (both apply), and `internet: false` for no egress. */
export interface SandboxNetworkSpec extends SandboxNetworkRules {
  internet?: boolean;
  proxy?: SandboxNetworkRules;
}

/** One entry of a list: a domain (`*.` for its subdomains), an address, or a block of addresses. */
export type NetworkRule =
  | { kind: 'domain'; text: string; name: string }
  | { kind: 'wildcard'; text: string; suffix: string }
  | { kind: 'address'; text: string; address: IpAddress }
  | { kind: 'block'; text: string; block: CidrBlock };

/** A sandbox's egress policy, parsed once and consulted for every name and connection. */
export interface EgressPolicy {
  internet: boolean;
  allowed: NetworkRule[];
  forbidden: NetworkRule[];
}

export type EgressVerdict = { allowed: true } | { allowed: false; rule: string };

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const LIST_FIELDS = ['allowedDomains', 'forbiddenDomains'] as const;
const MAX_ENTRIES = 1000;

/** A host name as a policy compares it: lower case, without the root's trailing dot. */
export function canonicalName(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}

function isDomainName(name: string): boolean {
  return name.length > 0 && name.length <= 253 && name.split('.').every((label) => LABEL.test(label));
}

/** One list entry, or why it is none. */
export function parseNetworkRule(entry: string): NetworkRule | { problem: string } {
  if (typeof entry !== 'string') return { problem: 'must be a string' };
  const text = entry.trim();
  const block = parseCidr(text);
  if (block && 'problem' in block) return { problem: `'${text}' ${block.problem}` };
  if (block) return { kind: 'block', text, block };
  const address = parseIp(text);
  if (address) return { kind: 'address', text, address: unmapped(address) };
  const name = canonicalName(text);
  if (name.startsWith('*.') && isDomainName(name.slice(2))) return { kind: 'wildcard', text, suffix: name.slice(1) };
  // A name made only of digits and dots would be a mistyped address, never a host anyone has.
  if (isDomainName(name) && !/^[0-9.]+$/.test(name)) return { kind: 'domain', text, name };
  return { problem: `'${text.slice(0, 300)}' is not a domain name (optionally '*.' and a domain), an IP address or a CIDR block` };
}

/** What is wrong with a `spec.network`, naming the entry (`body.spec.network.allowedDomains[2] ...`); undefined when nothing is. */
export function networkSpecProblem(spec: SandboxNetworkSpec | undefined, at = 'body.spec.network'): string | undefined {
  if (!spec) return undefined;
  const places: [string, SandboxNetworkRules | undefined][] = [
    [at, spec],
    [`${at}.proxy`, spec.proxy],
  ];
  for (const [place, rules] of places) {
    for (const field of LIST_FIELDS) {
      const list = rules?.[field] ?? [];
      if (list.length > MAX_ENTRIES) return `${place}.${field} has more than ${MAX_ENTRIES} entries`;
      for (const [i, entry] of list.entries()) {
        const rule = parseNetworkRule(entry);
        if ('problem' in rule) return `${place}.${field}[${i}] ${rule.problem}`;
      }
    }
  }
  return undefined;
}

function parsedList(spec: SandboxNetworkSpec, field: (typeof LIST_FIELDS)[number]): NetworkRule[] {
  const entries = [...(spec[field] ?? []), ...(spec.proxy?.[field] ?? [])];
  return entries.map(parseNetworkRule).filter((rule): rule is NetworkRule => !('problem' in rule));
}

/**
 * The policy of a `spec.network` (validated before: entries that do not parse are left out). No
 * `spec.network` at all is internet access with nothing forbidden beyond what is always blocked.
 */
export function egressPolicy(spec: SandboxNetworkSpec | undefined): EgressPolicy {
  if (!spec) return { internet: true, allowed: [], forbidden: [] };
  return { internet: spec.internet !== false, allowed: parsedList(spec, 'allowedDomains'), forbidden: parsedList(spec, 'forbiddenDomains') };
}

/** Whether the rule names this host: domains and wildcards match names, addresses and blocks match literal addresses. */
export function ruleMatches(rule: NetworkRule, host: string): boolean {
  const address = parseIp(host);
  if (address) {
    const plain = unmapped(address);
    if (rule.kind === 'address') return rule.address.family === plain.family && rule.address.value === plain.value;
    return rule.kind === 'block' && cidrContains(rule.block, plain);
  }
  const name = canonicalName(host);
  if (rule.kind === 'domain') return rule.name === name;
  return rule.kind === 'wildcard' && name.endsWith(rule.suffix) && name.length > rule.suffix.length;
}

/**
 * Whether the sandbox may reach `host` (a name, or a literal address as a client sent it). With an
 * allow list, only what it names; else everything the forbidden list does not name. Allowed wins
 * when both name the host. The addresses a name resolves to are checked apart (addressVerdict).
 */
export function hostVerdict(policy: EgressPolicy, host: string): EgressVerdict {
  if (!policy.internet) return { allowed: false, rule: 'spec.network.internet is false' };
  const allow = policy.allowed.find((rule) => ruleMatches(rule, host));
  if (allow) return { allowed: true };
  if (policy.allowed.length > 0) return { allowed: false, rule: 'not in spec.network.allowedDomains' };
  const forbid = policy.forbidden.find((rule) => ruleMatches(rule, host));
  if (forbid) return { allowed: false, rule: `spec.network.forbiddenDomains entry '${forbid.text}'` };
  return { allowed: true };
}

/** What the node blocks beside the fixed ranges: its own addresses and subnet, and the private blocks the operator opened. */
export interface NodeReach {
  nodeBlocked?: readonly CidrBlock[];
  allowedPrivate?: readonly CidrBlock[];
}

/**
 * Whether a connection may go to `address`, one that an allowed host resolved to (or the literal
 * address itself): never to the ranges always blocked or `nodeBlocked` (the node's own addresses,
 * its sandbox subnet), nor into a private range the operator did not open, nor, unless the allow
 * list named the host, into a forbidden address or block.
 */
export function addressVerdict(policy: EgressPolicy, host: string, address: string, reach: NodeReach = {}): EgressVerdict {
  const parsed = parseIp(address);
  if (!parsed) return { allowed: false, rule: `'${address}' is not an IP address` };
  const blocked = blockedRange(parsed, reach.nodeBlocked, reach.allowedPrivate);
  if (blocked && PRIVATE_RANGES.includes(blocked)) {
    return { allowed: false, rule: `${formatCidr(blocked)} is a private range the operator has not opened to sandboxes (HANGAR_SANDBOX_ALLOWED_PRIVATE_RANGES)` };
  }
  if (blocked) return { allowed: false, rule: `${formatCidr(blocked)} is never reachable from a sandbox` };
  if (policy.allowed.some((rule) => ruleMatches(rule, host))) return { allowed: true };
  const forbid = policy.forbidden.find((rule) => (rule.kind === 'address' || rule.kind === 'block') && ruleMatches(rule, address));
  if (forbid) return { allowed: false, rule: `spec.network.forbiddenDomains entry '${forbid.text}'` };
  return { allowed: true };
}

/**
 * Whether a name the asked host is an alias of (a CNAME on the way to its addresses) may be
 * followed: unless the allow list named the host itself, a forbidden name stays forbidden behind
 * an alias of someone else's making.
 */
export function aliasVerdict(policy: EgressPolicy, host: string, alias: string): EgressVerdict {
  if (policy.allowed.some((rule) => ruleMatches(rule, host))) return { allowed: true };
  const forbid = policy.forbidden.find((rule) => (rule.kind === 'domain' || rule.kind === 'wildcard') && ruleMatches(rule, alias));
  if (forbid) return { allowed: false, rule: `${host} is an alias of ${canonicalName(alias)}: spec.network.forbiddenDomains entry '${forbid.text}'` };
  return { allowed: true };
}

/**
 * Why a `spec.network` cannot be kept where the nodes give no outbound network (config
 * `sandboxNetwork` off): a policy the nodes would not apply is refused rather than kept as if it
 * were. Only `internet: false` (or no `spec.network`) is accepted there. The same answer for a
 * sandbox and for a workload.
 */
export function networkUnavailableProblem(spec: SandboxNetworkSpec | undefined, nodesHaveNetwork: boolean, at = 'body.spec.network'): string | undefined {
  if (!spec || spec.internet === false || nodesHaveNetwork) return undefined;
  return `${at}: sandboxes of this platform have no outbound network (HANGAR_SANDBOX_NETWORK is off); only internet: false is accepted`;
}
