import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError, badRequest, decodeSegment, readJsonObject, sendJson } from './http';
import type { PortForwards } from './port-forward';
import type { PortMonitor } from './port-monitor';
import { isHttpUrl } from './contract/port-events';
import { isLiveProcess, socketsOfProcessTree } from './proc';

const PID_TEXT = /^[1-9]\d{0,9}$/;

/** 400 for text that is no pid; 422 for a pid that is no live process of this sandbox. */
function parsePid(text: string): number {
  if (!PID_TEXT.test(text) || Number(text) > 2 ** 31 - 1) throw badRequest(`pid must be a positive integer, got '${text}'`);
  return Number(text);
}

function assertLive(pid: number): void {
  if (!isLiveProcess(pid)) throw new HttpError(422, `process ${pid} is not a live process of this sandbox`);
}

/** GET /network/process/{pid}/ports, POST and DELETE /network/process/{pid}/monitor. */
export function networkRoutes(monitor: PortMonitor, forwards?: PortForwards) {
  const forward = forwards?.route();
  return async function handle(req: IncomingMessage, res: ServerResponse, rest: string): Promise<void> {
    if (rest === 'forward' && forward) return forward(req, res);
    const match = /^process\/([^/]*)\/(ports|monitor)$/.exec(rest);
    if (!match) throw new HttpError(404, `no ${req.method} /network/${rest}`);
    const [, pidText, what] = match;
    const pid = parsePid(decodeSegment(pidText));

    if (what === 'ports') {
      if (req.method !== 'GET') throw new HttpError(405, `${req.method} is not allowed here`);
      assertLive(pid);
      const ports = (await socketsOfProcessTree(pid)).map(({ port, protocol, localAddr, state }) => ({ port, protocol, localAddr, state }));
      return sendJson(res, 200, { pid, ports });
    }
    if (req.method === 'POST') {
      const body = await readJsonObject(req, true);
      if (body.callback === undefined || body.callback === null || body.callback === '') throw badRequest("'callback' is required");
      if (typeof body.callback !== 'string' || !isHttpUrl(body.callback)) throw badRequest("'callback' must be an http or https URL");
      assertLive(pid);
      await monitor.start(pid, body.callback);
      return sendJson(res, 200, { pid, message: 'Port monitoring started' });
    }
    if (req.method === 'DELETE') {
      if (!monitor.stop(pid)) throw new HttpError(404, `process ${pid} has no port monitor`);
      return sendJson(res, 200, { pid, message: 'Port monitoring stopped' });
    }
    throw new HttpError(405, `${req.method} is not allowed here`);
  };
}
