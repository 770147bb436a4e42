import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError, decodeSegment, readJsonObject, sendJson } from './http';
import { LineFramer } from './output-log';
import { parseProcessRequest, type ManagedProcess, type ProcessManager } from './process-manager';

/** How long POST /process waits for `waitForPorts` when no timeout was given. */
export const DEFAULT_PORT_WAIT_SECONDS = 60;

/** POST/GET /process, GET/DELETE /process/{pidOrName}, .../kill, .../logs, .../logs/stream. */
export function processRoutes(manager: ProcessManager) {
  async function create(req: IncomingMessage, res: ServerResponse) {
    const request = parseProcessRequest(await readJsonObject(req, true));
    const managed = await manager.start(request);
    if (request.waitForCompletion) await managed.finished;
    else if (request.waitForPorts?.length) {
      await managed.waitForPorts(request.waitForPorts, Date.now() + (request.timeout ?? DEFAULT_PORT_WAIT_SECONDS) * 1000);
    }
    sendJson(res, 200, managed.view());
  }

  function streamLogs(res: ServerResponse, managed: ManagedProcess) {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' });
    res.flushHeaders();
    const framer = new LineFramer((line) => res.write(line));
    const unsubscribe = managed.output.follow({
      chunk: (chunk) => framer.chunk(chunk),
      end: () => {
        framer.flush();
        res.end();
      },
    });
    res.on('close', unsubscribe);
  }

  return async function handle(req: IncomingMessage, res: ServerResponse, rest: string): Promise<void> {
    const parts = rest === '' ? [] : rest.split('/').map(decodeSegment);
    const method = req.method;
    if (parts.length === 0) {
      if (method === 'POST') return create(req, res);
      if (method === 'GET') return sendJson(res, 200, manager.list().map((p) => p.view()));
      throw new HttpError(405, `${method} is not allowed on /process`);
    }
    const managed = manager.get(parts[0]);
    const action = parts.slice(1).join('/');
    if (action === '' && method === 'GET') return sendJson(res, 200, managed.view());
    if (action === '' && method === 'DELETE') {
      await managed.stop();
      return sendJson(res, 200, managed.view());
    }
    if (action === 'kill' && (method === 'DELETE' || method === 'POST')) {
      await managed.kill();
      return sendJson(res, 200, managed.view());
    }
    if (action === 'logs' && method === 'GET') {
      return sendJson(res, 200, { stdout: managed.output.text('stdout'), stderr: managed.output.text('stderr'), logs: managed.output.text() });
    }
    if (action === 'logs/stream' && method === 'GET') return streamLogs(res, managed);
    throw new HttpError(404, `no ${method} /process/${rest}`);
  };
}
