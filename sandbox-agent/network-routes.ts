import { HttpError, badRequest, decodeSegment, readJsonObject, sendJson } from './http';
import type { PortForwards } from './port-forward';
import type { PortMonitor } from './port-monitor';
import type { PidMessage, PortForward, ProcessPorts } from './contract/network';
import { isHttpUrl } from './contract/port-events';
import { isLiveProcess, socketsOfProcessTree } from './proc';
import type { RouteContext, RouteHandlers } from './route-handler';

const PID_TEXT = /^[1-9]\d{0,9}$/;

/** 400 for text that is no pid; 422 for a pid that is no live process of this sandbox. */
function parsePid(text: string): number {
  if (!PID_TEXT.test(text) || Number(text) > 2 ** 31 - 1) throw badRequest(`pid must be a positive integer, got '${text}'`);
  return Number(text);
}

function assertLive(pid: number): void {
  if (!isLiveProcess(pid)) throw new HttpError(422, `process ${pid} is not a live process of this sandbox`);
}

type NetworkOperation = 'processPorts' | 'startPortMonitor' | 'stopPortMonitor' | 'forwardPort';

/** The /network routes of the contract: a process's sockets, its port monitor, and (for the host) port forwarders. */
export function networkRoutes(monitor: PortMonitor, forwards: PortForwards) {
  /** The pid a route names. */
  const pidOf = ({ params }: RouteContext) => parsePid(decodeSegment(params.pid));

  return {
    processPorts: async (_req, res, context) => {
      const pid = pidOf(context);
      assertLive(pid);
      const ports = (await socketsOfProcessTree(pid)).map(({ port, protocol, localAddr, state }) => ({ port, protocol, localAddr, state }));
      sendJson(res, 200, { pid, ports } satisfies ProcessPorts);
    },
    startPortMonitor: async (req, res, context) => {
      const pid = pidOf(context);
      const body = await readJsonObject(req, true);
      if (body.callback === undefined || body.callback === null || body.callback === '') throw badRequest("'callback' is required");
      if (typeof body.callback !== 'string' || !isHttpUrl(body.callback)) throw badRequest("'callback' must be an http or https URL");
      assertLive(pid);
      await monitor.start(pid, body.callback);
      sendJson(res, 200, { pid, message: 'Port monitoring started' } satisfies PidMessage);
    },
    stopPortMonitor: async (_req, res, context) => {
      const pid = pidOf(context);
      if (!monitor.stop(pid)) throw new HttpError(404, `process ${pid} has no port monitor`);
      sendJson(res, 200, { pid, message: 'Port monitoring stopped' } satisfies PidMessage);
    },
    forwardPort: async (req, res) => {
      const body = await readJsonObject(req, true);
      const port = body.port;
      if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) throw badRequest("'port' must be a port number (1-65535)");
      sendJson(res, 200, { port, socketPath: await forwards.open(port) } satisfies PortForward);
    },
  } satisfies RouteHandlers<NetworkOperation>;
}
