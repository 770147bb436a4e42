/** The one question of a DNS query, as the sandbox's resolver sends it. */
export interface DnsQuestion {
  id: number;
  flags: number;
  name: string;
  type: number;
  /** The question section as sent, copied into the answer. */
  section: Buffer;
}

export const DNS_TYPE_A = 1;
export const RCODE_NXDOMAIN = 3;
export const RCODE_FORMERR = 1;
const ANSWER_TTL_SECONDS = 30;

/** The query's single question, or undefined for anything else (several questions, compression, a truncated packet). */
export function parseDnsQuery(packet: Buffer): DnsQuestion | undefined {
  if (packet.length < 12 || packet.readUInt16BE(4) !== 1) return undefined;
  const flags = packet.readUInt16BE(2);
  if (flags & 0x8000) return undefined;
  const labels: string[] = [];
  let at = 12;
  while (at < packet.length && packet[at] !== 0) {
    const length = packet[at];
    if (length > 63 || at + 1 + length > packet.length) return undefined;
    labels.push(packet.subarray(at + 1, at + 1 + length).toString('latin1'));
    at += 1 + length;
  }
  if (at + 5 > packet.length) return undefined;
  const type = packet.readUInt16BE(at + 1);
  return { id: packet.readUInt16BE(0), flags, name: labels.join('.'), type, section: packet.subarray(12, at + 5) };
}

/** An answer to `question`: `rcode`, and A records for the IPv4 `addresses` (none for other types). */
export function dnsAnswer(question: DnsQuestion, rcode: number, addresses: string[] = []): Buffer {
  const records = question.type === DNS_TYPE_A ? addresses : [];
  const header = Buffer.alloc(12);
  header.writeUInt16BE(question.id, 0);
  // QR, the query's opcode and RD, RA; the rcode.
  header.writeUInt16BE(0x8000 | (question.flags & 0x7900) | 0x0080 | rcode, 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(records.length, 6);
  const answers = records.map((address) => {
    const record = Buffer.alloc(16);
    // A pointer to the name in the question (offset 12).
    record.writeUInt16BE(0xc00c, 0);
    record.writeUInt16BE(DNS_TYPE_A, 2);
    record.writeUInt16BE(1, 4);
    record.writeUInt32BE(ANSWER_TTL_SECONDS, 6);
    record.writeUInt16BE(4, 10);
    address.split('.').forEach((octet, i) => record.writeUInt8(Number(octet), 12 + i));
    return record;
  });
  return Buffer.concat([header, question.section, ...answers]);
}
