/**
 * IP addresses and CIDR blocks as numbers, parsed strictly (no leading zeros, no short IPv4
 * forms such as `127.1`, which resolvers accept and a policy must not misread). Written here
 * rather than with node:net because workflows load domain/ and may not import Node's modules.
 */
export interface IpAddress {
  family: 4 | 6;
  value: bigint;
}

export interface CidrBlock {
  family: 4 | 6;
  /** The first address of the block (host bits zero). */
  base: bigint;
  prefix: number;
}

const BITS = { 4: 32, 6: 128 } as const;

export function parseIpv4(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0n;
  for (const part of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part) || Number(part) > 255) return undefined;
    value = (value << 8n) | BigInt(part);
  }
  return value;
}

/** Groups of one side of `::`, the last of which may be an IPv4 address (two groups). */
function ipv6Groups(side: string, last: boolean): number[] | undefined {
  if (side === '') return [];
  const groups: number[] = [];
  const parts = side.split(':');
  for (const [i, part] of parts.entries()) {
    if (last && i === parts.length - 1 && part.includes('.')) {
      const v4 = parseIpv4(part);
      if (v4 === undefined) return undefined;
      groups.push(Number(v4 >> 16n), Number(v4 & 0xffffn));
    } else if (/^[0-9a-fA-F]{1,4}$/.test(part)) groups.push(parseInt(part, 16));
    else return undefined;
  }
  return groups;
}

export function parseIpv6(text: string): bigint | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const head = ipv6Groups(halves[0], halves.length === 1);
  const tail = halves.length === 2 ? ipv6Groups(halves[1], true) : [];
  if (!head || !tail) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...new Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail];
  return groups.reduce((value, group) => (value << 16n) | BigInt(group), 0n);
}

/** An IPv4 or IPv6 address (IPv6 possibly in brackets, as in a URL or a Host header). */
export function parseIp(text: string): IpAddress | undefined {
  const v4 = parseIpv4(text);
  if (v4 !== undefined) return { family: 4, value: v4 };
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const v6 = parseIpv6(bare);
  return v6 === undefined ? undefined : { family: 6, value: v6 };
}

/** `a.b.c.d/n` or `x::/n`; host bits must be zero (a typo there should not widen a rule). */
export function parseCidr(text: string): CidrBlock | { problem: string } | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const address = parseIp(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (!address || !/^(0|[1-9][0-9]{0,2})$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  const bits = BITS[address.family];
  if (prefix > bits) return { problem: `has a prefix longer than ${bits} bits` };
  const base = address.value & mask(address.family, prefix);
  if (base !== address.value) return { problem: `has host bits set (the block starts at ${formatIp({ family: address.family, value: base })}/${prefix})` };
  return { family: address.family, base, prefix };
}

function mask(family: 4 | 6, prefix: number): bigint {
  const bits = BigInt(BITS[family]);
  return ((1n << bits) - 1n) ^ ((1n << (bits - BigInt(prefix))) - 1n);
}

export function cidrContains(block: CidrBlock, address: IpAddress): boolean {
  return block.family === address.family && (address.value & mask(block.family, block.prefix)) === block.base;
}

/** The IPv4 address an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) stands for; the address itself otherwise. */
export function unmapped(address: IpAddress): IpAddress {
  if (address.family === 6 && address.value >> 32n === 0xffffn) return { family: 4, value: address.value & 0xffffffffn };
  return address;
}

export function formatIp(address: IpAddress): string {
  if (address.family === 4) return [24n, 16n, 8n, 0n].map((shift) => String((address.value >> shift) & 0xffn)).join('.');
  const groups = [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((shift) => ((address.value >> shift) & 0xffffn).toString(16));
  return groups.join(':');
}

const cidr = (text: string) => parseCidr(text) as CidrBlock;

/**
 * Never reachable from a sandbox, whatever its policy or the operator's settings: this host
 * (loopback), link-local (cloud metadata at 169.254.169.254), multicast and reserved ranges, and
 * their IPv6 counterparts.
 */
export const NEVER_REACHABLE_RANGES: readonly CidrBlock[] = [
  '0.0.0.0/8',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '192.0.0.0/24',
  '198.18.0.0/15',
  '224.0.0.0/4',
  '240.0.0.0/4',
  '::/127',
  '64:ff9b::/96',
  'fe80::/10',
  'ff00::/8',
].map(cidr);

/**
 * Private networks (RFC 1918, carrier-grade NAT, IPv6 unique local): blocked unless the operator
 * opens blocks of them (HANGAR_SANDBOX_ALLOWED_PRIVATE_RANGES), e.g. for a package mirror on the
 * company network.
 */
export const PRIVATE_RANGES: readonly CidrBlock[] = ['10.0.0.0/8', '100.64.0.0/10', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'].map(cidr);

/** Whether every address of `inner` is in `outer`. */
export function cidrWithin(inner: CidrBlock, outer: CidrBlock): boolean {
  return inner.prefix >= outer.prefix && cidrContains(outer, { family: inner.family, value: inner.base });
}

/**
 * The range that blocks `address`: a never-reachable one or one of `extra` (the node's own
 * addresses, its sandbox subnet) whatever else, or a private one no block of `allowedPrivate`
 * opens. Undefined when none does.
 */
export function blockedRange(address: IpAddress, extra: readonly CidrBlock[] = [], allowedPrivate: readonly CidrBlock[] = []): CidrBlock | undefined {
  const plain = unmapped(address);
  const never = [...NEVER_REACHABLE_RANGES, ...extra].find((block) => cidrContains(block, plain));
  if (never) return never;
  if (allowedPrivate.some((block) => cidrContains(block, plain))) return undefined;
  return PRIVATE_RANGES.find((block) => cidrContains(block, plain));
}

/**
 * The operator's allowed private ranges from a comma-separated list of CIDR blocks, or what is
 * wrong, naming the entry: each must lie inside a private range (opening a public block means
 * nothing, and no setting opens loopback or link-local).
 */
export function parseAllowedPrivateRanges(text: string, variable: string): CidrBlock[] | { problem: string } {
  const blocks: CidrBlock[] = [];
  const entries = text.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
  for (const [i, entry] of entries.entries()) {
    const block = parseCidr(entry);
    if (!block) return { problem: `${variable}[${i}] '${entry}' is not a CIDR block (a.b.c.d/n or x::/n)` };
    if ('problem' in block) return { problem: `${variable}[${i}] '${entry}' ${block.problem}` };
    if (!PRIVATE_RANGES.some((range) => cidrWithin(block, range))) {
      return { problem: `${variable}[${i}] '${entry}' is not inside a private range (${PRIVATE_RANGES.map(formatCidr).join(', ')})` };
    }
    blocks.push(block);
  }
  return blocks;
}

export function formatCidr(block: CidrBlock): string {
  return `${formatIp({ family: block.family, value: block.base })}/${block.prefix}`;
}
