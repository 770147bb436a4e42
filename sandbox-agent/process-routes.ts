import type { IncomingMessage, ServerResponse } from 'node:http';
import { DEFAULT_PORT_WAIT_SECONDS, STDIN_MAX_BODY_BYTES } from './contract/limits';
import type { ProcessLogs, StdinMessage } from './contract/process';
import { HttpError, decodeSegment, readBody, readJsonObject, sendJson } from './http';
import { LineFramer, prefixedLine } from './output-log';
import { parseProcessRequest, type ManagedProcess, type ProcessManager } from './process-manager';
import { streamExecution, wantsExecutionStream } from './process-stream';
import type { RouteContext, RouteHandler, RouteHandlers } from './route-handler';

type ProcessOperation =
  | 'startProcess'
  | 'listProcesses'
  | 'getProcess'
  | 'stopProcess'
  | 'killProcess'
  | 'killProcessByDelete'
  | 'processLogs'
  | 'streamProcessLogs'
  | 'writeProcessStdin'
  | 'closeProcessStdin';

/** The /process routes of the contract: start, list, show, stop and kill processes, and their output. */
export function processRoutes(manager: ProcessManager) {
  async function create(req: IncomingMessage, res: ServerResponse) {
    const request = parseProcessRequest(await readJsonObject(req, true));
    const managed = await manager.start(request);
    if (wantsExecutionStream(req)) return streamExecution(res, managed);
    if (request.waitForCompletion) await managed.finished;
    else if (request.waitForPorts?.length) {
      await managed.waitForPorts(request.waitForPorts, Date.now() + (request.timeout ?? DEFAULT_PORT_WAIT_SECONDS) * 1000);
    }
    sendJson(res, 200, managed.view());
  }

  function streamLogs(res: ServerResponse, managed: ManagedProcess) {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' });
    res.flushHeaders();
    const framer = new LineFramer((stream, text) => res.write(prefixedLine(stream, text)));
    const unsubscribe = managed.output.follow({
      chunk: (chunk) => framer.chunk(chunk),
      end: () => {
        framer.flush();
        res.end();
      },
    });
    res.on('close', unsubscribe);
  }

  /** The process a route names, by pid or name. */
  const named = ({ params }: RouteContext) => manager.get(decodeSegment(params.process));

  /** The stdin pipe of the process a route names; 409 for one started without it. */
  const stdinOf = (context: RouteContext) => {
    const managed = named(context);
    if (!managed.stdin) throw new HttpError(409, `process '${managed.name}' was not started with "stdin": true`);
    return managed.stdin;
  };

  const kill: RouteHandler = async (_req, res, context) => {
    const managed = named(context);
    await managed.kill();
    sendJson(res, 200, managed.view());
  };

  return {
    startProcess: (req, res) => create(req, res),
    listProcesses: async (_req, res) => sendJson(res, 200, manager.list().map((p) => p.view())),
    getProcess: async (_req, res, context) => sendJson(res, 200, named(context).view()),
    stopProcess: async (_req, res, context) => {
      const managed = named(context);
      await managed.stop();
      sendJson(res, 200, managed.view());
    },
    killProcess: kill,
    killProcessByDelete: kill,
    processLogs: async (_req, res, context) => {
      const { output } = named(context);
      sendJson(res, 200, { stdout: output.text('stdout'), stderr: output.text('stderr'), logs: output.text() } satisfies ProcessLogs);
    },
    streamProcessLogs: async (_req, res, context) => streamLogs(res, named(context)),
    writeProcessStdin: async (req, res, context) => {
      const stdin = stdinOf(context);
      const body = await readBody(req, STDIN_MAX_BODY_BYTES);
      await stdin.write(body);
      sendJson(res, 200, { message: `${body.length} bytes written to stdin` } satisfies StdinMessage);
    },
    closeProcessStdin: async (_req, res, context) => {
      stdinOf(context).close();
      sendJson(res, 200, { message: 'stdin closed' } satisfies StdinMessage);
    },
  } satisfies RouteHandlers<ProcessOperation>;
}
