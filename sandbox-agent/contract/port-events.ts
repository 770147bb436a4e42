/**
 * The port event log: one JSON object per line, appended by the agent inside the sandbox and
 * read by the host, which delivers each event to its callback. The sandbox has no network, so
 * the agent never calls a callback itself. The key is the event's idempotency key.
 */
export interface PortEvent {
  key: string;
  callback: string;
  pid: number;
  port: number;
  sandbox: string;
  detectedAt: string;
}

export function formatPortEvent(event: PortEvent): string {
  return `${JSON.stringify(event)}\n`;
}

/**
 * Parses one line. The file sits in a folder the sandbox user can write to, so a line may be
 * forged or garbage: only well-formed events with an http(s) callback are accepted.
 */
export function parsePortEvent(line: string): PortEvent | undefined {
  let value: Partial<PortEvent>;
  try {
    value = JSON.parse(line) as Partial<PortEvent>;
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { key, callback, pid, port, sandbox, detectedAt } = value;
  if (typeof key !== 'string' || !/^[A-Za-z0-9-]{1,64}$/.test(key)) return undefined;
  if (typeof callback !== 'string' || !isHttpUrl(callback)) return undefined;
  if (!Number.isInteger(pid) || !Number.isInteger(port) || port! < 1 || port! > 65535) return undefined;
  if (typeof sandbox !== 'string' || typeof detectedAt !== 'string' || Number.isNaN(Date.parse(detectedAt))) return undefined;
  return { key, callback, pid: pid!, port: port!, sandbox, detectedAt };
}

export function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}
