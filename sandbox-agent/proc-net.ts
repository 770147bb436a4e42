/** Reading the kernel's socket tables (/proc/net/tcp and tcp6): pure text parsing. */

export interface TcpSocket {
  inode: string;
  localAddr: string;
  port: number;
  state: string;
  protocol: 'tcp' | 'tcp6';
}

const STATES: Record<string, string> = {
  '01': 'ESTABLISHED',
  '02': 'SYN_SENT',
  '03': 'SYN_RECV',
  '04': 'FIN_WAIT1',
  '05': 'FIN_WAIT2',
  '06': 'TIME_WAIT',
  '07': 'CLOSE',
  '08': 'CLOSE_WAIT',
  '09': 'LAST_ACK',
  '0A': 'LISTEN',
  '0B': 'CLOSING',
};

export function parseTcpTable(text: string, protocol: 'tcp' | 'tcp6'): TcpSocket[] {
  const sockets: TcpSocket[] = [];
  for (const line of text.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 10) continue;
    const [address, portHex] = fields[1].split(':');
    sockets.push({
      inode: fields[9],
      localAddr: protocol === 'tcp' ? ipv4(address) : ipv6(address),
      port: parseInt(portHex, 16),
      state: STATES[fields[3].toUpperCase()] ?? fields[3],
      protocol,
    });
  }
  return sockets;
}

/** The kernel prints the address as one 32-bit word in host (little-endian) byte order. */
function ipv4(hex: string): string {
  const bytes = hex.match(/../g)!.map((b) => parseInt(b, 16));
  return bytes.reverse().join('.');
}

/** Four 32-bit words, each in host byte order. */
function ipv6(hex: string): string {
  const bytes: number[] = [];
  for (let word = 0; word < 4; word++) {
    const chunk = hex.slice(word * 8, word * 8 + 8).match(/../g)!.map((b) => parseInt(b, 16));
    bytes.push(...chunk.reverse());
  }
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i] << 8) | bytes[i + 1]).toString(16));
  return compressIpv6(groups);
}

/** RFC 5952 text: the longest run of zero groups becomes '::'. */
function compressIpv6(groups: string[]): string {
  let bestStart = -1;
  let bestLength = 0;
  for (let i = 0; i < groups.length; ) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < groups.length && groups[j] === '0') j++;
    if (j - i > bestLength && j - i > 1) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  if (bestStart < 0) return groups.join(':');
  return `${groups.slice(0, bestStart).join(':')}::${groups.slice(bestStart + bestLength).join(':')}`;
}

/** Parses /proc/<pid>/stat: the parent pid and the state letter. */
export function parseStat(text: string): { ppid: number; state: string; pgrp: number } | undefined {
  const end = text.lastIndexOf(')');
  if (end < 0) return undefined;
  const fields = text.slice(end + 2).split(' ');
  return { state: fields[0], ppid: Number(fields[1]), pgrp: Number(fields[2]) };
}
