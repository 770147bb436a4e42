import net from 'node:net';

/** Where a node's listener accepts the gateways' connections (HANGAR_NODE_LISTEN). */
export interface NodeListenAddress {
  host: string;
  port: number;
}

/**
 * `host:port` (an IPv4 address or `[IPv6]`, port 1-65535), or what is wrong with it. The host is
 * an address, not a name: it is what the other nodes' sandboxes are refused, so it must be exact.
 */
export function parseNodeListen(text: string): NodeListenAddress | { problem: string } {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([0-9.]+)):(\d{1,5})$/.exec(text.trim());
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (!match || !host || !net.isIP(host)) return { problem: `must be <IP address>:<port> (e.g. 10.0.0.5:7443), got '${text}'` };
  if (port < 1 || port > 65_535) return { problem: `port must be 1-65535, got '${match[3]}'` };
  return { host, port };
}

/** The URL other hosts reach a listener at; for an unspecified host (0.0.0.0, ::) the caller must advertise one. */
export function nodeListenerUrl({ host, port }: NodeListenAddress): string {
  return `http://${net.isIPv6(host) ? `[${host}]` : host}:${port}`;
}

/** Whether the listener binds every address, so no URL can be derived from it. */
export function isUnspecifiedHost(host: string): boolean {
  return host === '0.0.0.0' || host === '::';
}

/** The host and port a listener URL names (as the nodes table holds it), or undefined for none that parses. */
export function listenerEndpoint(url: string): NodeListenAddress | undefined {
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:') return undefined;
    const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
    return { host, port: Number(parsed.port || 80) };
  } catch {
    return undefined;
  }
}
