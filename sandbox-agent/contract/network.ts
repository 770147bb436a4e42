import { schemaOf } from './schema';

/** The network API (`/network/...`): ports a process listens on, port monitors, forwarders. */

export interface ListeningPort {
  port: number;
  protocol: 'tcp' | 'tcp6';
  localAddr: string;
  /** The kernel's socket state, for example LISTEN or ESTABLISHED. */
  state: string;
}

/** GET /network/process/{pid}/ports: the sockets of a process and its descendants. */
export interface ProcessPorts {
  pid: number;
  ports: ListeningPort[];
}

/** The body of POST /network/process/{pid}/monitor (PortMonitorRequest). */
export interface PortMonitorRequest {
  /** Called (POST, JSON `{pid, port, ...}`) for each port the process starts listening on. */
  callback: string;
}

/** What starting or stopping a port monitor answers. */
export interface PidMessage {
  pid: number;
  message: string;
}

/** The body of POST /network/forward (internal). */
export interface PortForwardRequest {
  port: number;
}

/** A forwarder from a Unix socket (its path inside the sandbox) to a port of the sandbox. */
export interface PortForward {
  port: number;
  socketPath: string;
}

export const processPortsSchema = schemaOf<ProcessPorts>({
  type: 'object',
  properties: {
    pid: { type: 'integer' },
    ports: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          port: { type: 'integer' },
          protocol: { type: 'string', enum: ['tcp', 'tcp6'] },
          localAddr: { type: 'string' },
          state: { type: 'string', description: 'LISTEN, ESTABLISHED, ...' },
        },
      },
    },
  },
});

export const portMonitorRequestSchema = schemaOf<PortMonitorRequest>({
  type: 'object',
  properties: { callback: { type: 'string', format: 'uri', description: 'An http or https URL, called for each new listening port.' } },
});

export const pidMessageSchema = schemaOf<PidMessage>({ type: 'object', properties: { pid: { type: 'integer' }, message: { type: 'string' } } });

export const portForwardRequestSchema = schemaOf<PortForwardRequest>({ type: 'object', properties: { port: { type: 'integer', minimum: 1, maximum: 65535 } } });

export const portForwardSchema = schemaOf<PortForward>({ type: 'object', properties: { port: { type: 'integer' }, socketPath: { type: 'string' } } });
