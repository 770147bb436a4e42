/**
 * What the first bytes of a connection name as its destination, for the egress proxy: the TLS
 * ClientHello's server name (SNI), or an HTTP request's Host (or CONNECT target).
 */
export type FirstBytes = { need: 'more' } | { host: string; port?: number } | { problem: string };

const MORE: FirstBytes = { need: 'more' };
/** A ClientHello fits in one TLS record (16 KiB); headers of a request in this much. */
export const MAX_FIRST_BYTES = 16 * 1024 + 5;

/** The server name of a TLS ClientHello (from its first record; clients send it whole). */
export function tlsServerName(data: Buffer): FirstBytes {
  if (data.length < 5) return MORE;
  if (data[0] !== 22) return { problem: 'not a TLS handshake' };
  const recordLength = data.readUInt16BE(3);
  if (data.length < 5 + recordLength) return MORE;
  const hello = data.subarray(5, 5 + recordLength);
  if (hello[0] !== 1) return { problem: 'not a ClientHello' };
  try {
    let at = 4 + 2 + 32;
    at += 1 + hello[at];
    at += 2 + hello.readUInt16BE(at);
    at += 1 + hello[at];
    const end = at + 2 + hello.readUInt16BE(at);
    at += 2;
    while (at + 4 <= end) {
      const type = hello.readUInt16BE(at);
      const length = hello.readUInt16BE(at + 2);
      if (type === 0) return serverNameExtension(hello.subarray(at + 4, at + 4 + length));
      at += 4 + length;
    }
  } catch {
    return { problem: 'a malformed ClientHello' };
  }
  return { problem: 'a ClientHello without a server name (SNI)' };
}

function serverNameExtension(ext: Buffer): FirstBytes {
  let at = 2;
  while (at + 3 <= ext.length) {
    const nameType = ext[at];
    const length = ext.readUInt16BE(at + 1);
    if (nameType === 0) return { host: ext.subarray(at + 3, at + 3 + length).toString('latin1') };
    at += 3 + length;
  }
  return { problem: 'a ClientHello without a host name' };
}

/** Host and port of `host`, `host:port`, `[v6]` or `[v6]:port`. */
export function splitHostPort(text: string): { host: string; port?: number } | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+)(?::([0-9]{1,5}))?$/.exec(text.trim());
  if (!match) return undefined;
  const port = match[2] === undefined ? undefined : Number(match[2]);
  if (port !== undefined && (port < 1 || port > 65_535)) return undefined;
  return { host: match[1].replace(/^\[|\]$/g, ''), port };
}

/** The request's header block, once complete. */
export function requestHead(data: Buffer): string | undefined {
  const end = data.indexOf('\r\n\r\n');
  return end < 0 ? undefined : data.subarray(0, end).toString('latin1');
}

/** The Host header of a plain HTTP request. */
export function httpHost(data: Buffer): FirstBytes {
  const head = requestHead(data);
  if (head === undefined) return MORE;
  const line = head.split('\r\n').find((l) => /^host:/i.test(l));
  const target = line && splitHostPort(line.slice(5));
  return target ? target : { problem: 'an HTTP request without a valid Host header' };
}
