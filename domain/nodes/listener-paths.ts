/**
 * The paths of a node listener, built by the gateways and parsed by the listener: a sandbox's own
 * API, a port inside it, its freeze state and thaw, and a workload instance's socket. `rest` is
 * the path (with query) the sandbox or instance is asked for.
 */
export type ListenerTarget =
  | { kind: 'sandbox-api'; sandboxId: string; rest: string }
  | { kind: 'sandbox-port'; sandboxId: string; port: number; rest: string }
  | { kind: 'sandbox-frozen'; sandboxId: string }
  | { kind: 'sandbox-thaw'; sandboxId: string }
  | { kind: 'workload'; socketName: string; rest: string };

/**
 * The listener thaws a sandbox in standby before serving a request for it (as a gateway of its
 * host does), and says so in this header of its answer, `<generation>,<thawedAt ms>`, for the
 * gateway to tell the sandbox's workflow: one round trip, not a freeze check first.
 */
export const NODE_THAWED_HEADER = 'x-hangar-node-thawed';

const SANDBOX_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;
/** A workload instance's pinned socket: `<sandbox id>-<port>.sock` in the node's workload sockets folder. */
const WORKLOAD_SOCKET = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}-\d{1,5}\.sock$/;

const restOf = (rest: string) => (rest.startsWith('/') ? rest : `/${rest}`);

export function listenerPath(target: ListenerTarget): string {
  switch (target.kind) {
    case 'sandbox-api':
      return `/sandboxes/${target.sandboxId}/api${restOf(target.rest)}`;
    case 'sandbox-port':
      return `/sandboxes/${target.sandboxId}/ports/${target.port}${restOf(target.rest)}`;
    case 'sandbox-frozen':
      return `/sandboxes/${target.sandboxId}/frozen`;
    case 'sandbox-thaw':
      return `/sandboxes/${target.sandboxId}/thaw`;
    case 'workload':
      return `/workloads/${target.socketName}${restOf(target.rest)}`;
  }
}

/** What a listener path names, or undefined for none (404). Ids and socket names are checked here: they become file names. */
export function parseListenerPath(path: string): ListenerTarget | undefined {
  const match = /^\/(sandboxes|workloads)\/([^/?]+)(.*)$/.exec(path);
  if (!match) return undefined;
  const [, collection, name, tail] = match;
  if (collection === 'workloads') return WORKLOAD_SOCKET.test(name) && (tail === '' || /^[/?]/.test(tail)) ? { kind: 'workload', socketName: name, rest: restOf(tail) } : undefined;
  if (!SANDBOX_ID.test(name)) return undefined;
  if (tail === '/frozen') return { kind: 'sandbox-frozen', sandboxId: name };
  if (tail === '/thaw') return { kind: 'sandbox-thaw', sandboxId: name };
  const api = /^\/api(\/.*|\?.*)?$/.exec(tail);
  if (api) return { kind: 'sandbox-api', sandboxId: name, rest: restOf(api[1] ?? '/') };
  const port = /^\/ports\/(\d{1,5})([/?].*)?$/.exec(tail);
  if (port && Number(port[1]) >= 1 && Number(port[1]) <= 65_535) return { kind: 'sandbox-port', sandboxId: name, port: Number(port[1]), rest: restOf(port[2] ?? '/') };
  return undefined;
}
