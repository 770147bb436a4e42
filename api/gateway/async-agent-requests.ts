import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';
import { Type } from 'typebox';
import {
  ASYNC_FORWARDED_HEADERS,
  ASYNC_REQUEST_BODY_LIMIT,
  AsyncRequestError,
  CALLBACK_URL_HEADER,
  agentQuery,
  agentRequestWorkflowId,
  parseCallbackUrl,
  type AgentRequestKey,
} from '../../domain/agents/async-requests';
import type { Client } from '@temporalio/client';
import { nodeTaskQueue, type HangarConfig } from '../../domain/config';
import { newUuid } from '../../domain/ids';
import type { AgentRequestInput, agentRequest } from '../../workflows/agent-request';
import { ApiError, badRequest, notFound } from '../../domain/errors';
import { AgentRequestStore, agentRequestView } from '../../store/agent-requests';
import type { GatewayCaller, WorkloadTarget } from './route-cache';

/** `?async=true` on `POST {run_url}/{workspace}/agents/{agent}`; other parameters go to the agent. */
export const AgentQuery = Type.Object(
  { async: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')], { description: 'true: answer 202 at once and run the request in the background.' })) },
  { additionalProperties: true },
);
const RequestParams = Type.Object({ workspace: Type.String({ maxLength: 200 }), name: Type.String({ maxLength: 200 }), id: Type.String({ maxLength: 200 }) });

/**
 * Reads a body into memory up to `limit` bytes. A longer one is a 413 as soon as it is known
 * (from Content-Length, or when the limit is crossed); the rest is discarded, not held, so the
 * answer still reaches the client.
 */
function readBody(raw: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () => new ApiError(413, 'payload_too_large', `the body of an async request is larger than the limit of ${limit} bytes`);
  if (Number(raw.headers['content-length']) > limit) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const onData = (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= limit) return void chunks.push(chunk);
      raw.off('data', onData).off('end', onEnd).resume();
      reject(tooLarge());
    };
    const onEnd = () => resolve(Buffer.concat(chunks));
    raw.on('data', onData).on('end', onEnd).once('error', reject);
  });
}

/** The request headers the agent needs, kept with an async request (ASYNC_FORWARDED_HEADERS). */
function forwardedHeaders(request: FastifyRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of ASYNC_FORWARDED_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}

/** Starts the workflow that runs a stored request; without it the request would stay queued forever, so a failed start takes it back. */
async function startAgentRequest(deps: { temporal: Client; config: HangarConfig; requests: AgentRequestStore }, input: AgentRequestInput): Promise<void> {
  const { key } = input;
  try {
    await deps.temporal.workflow.start<typeof agentRequest>('agentRequest', {
      taskQueue: deps.config.taskQueue,
      workflowId: agentRequestWorkflowId(key.workspace, key.agentName, key.id),
      args: [input],
    });
  } catch (err) {
    await deps.requests.delete(key.id);
    throw err;
  }
}

/**
 * Async agent requests on run_url. `accept` stores the request (body, the headers the agent needs,
 * the callback URL), starts its workflow and answers 202 at once; the result is read with
 * `GET {run_url}/{workspace}/agents/{agent}/requests/{id}` or arrives at the callback, signed.
 */
export function asyncAgentRequests(app: FastifyInstance, callerOf: (request: FastifyRequest) => Promise<GatewayCaller>) {
  const requests = new AgentRequestStore(app.pg);
  const config = app.config;

  /** The callback header is only meaningful with ?async=true: a sync call would silently drop it. */
  function callbackUrlOf(request: FastifyRequest, isAsync: boolean): string | undefined {
    const header = request.headers[CALLBACK_URL_HEADER];
    if (header !== undefined && !isAsync) throw badRequest('header X-Service-Callback-Url needs ?async=true');
    try {
      return parseCallbackUrl(header);
    } catch (err) {
      if (err instanceof AsyncRequestError) throw badRequest(err.message);
      throw err;
    }
  }

  async function accept(request: FastifyRequest, reply: FastifyReply, target: WorkloadTarget) {
    if (request.method !== 'POST') throw badRequest(`?async=true is for POST requests, not ${request.method}`);
    const callbackUrl = callbackUrlOf(request, true);
    const body = await readBody(request.raw, ASYNC_REQUEST_BODY_LIMIT);
    const key: AgentRequestKey = {
      id: newUuid(),
      accountId: target.principal.accountId,
      workspace: target.grant.name,
      workspaceId: target.grant.id,
      agentId: target.route.resourceId,
      agentName: target.name,
    };
    const row = await requests.create({
      id: key.id,
      workspaceId: key.workspaceId,
      agentId: key.agentId,
      agentName: key.agentName,
      path: `/${agentQuery(request.url)}`,
      headers: forwardedHeaders(request),
      body,
      callbackUrl,
      actor: target.principal.clientId,
    });
    const input: AgentRequestInput = {
      key,
      // The node the serving revision runs on (its socket is there), this one for rows from before placement.
      nodeQueue: nodeTaskQueue({ taskQueue: config.taskQueue, nodeId: target.route.node.nodeId ?? config.nodeId }),
      acceptedAt: row.created_at.getTime(),
      hasCallback: callbackUrl !== undefined,
      delivery: { giveUpAfterMs: config.callbackGiveUpSeconds * 1000 },
    };
    await startAgentRequest({ temporal: app.temporal, config, requests }, input);
    const url = `${config.runUrl}/${key.workspace}/agents/${key.agentName}/requests/${key.id}`;
    reply.code(202).header('location', url);
    return { ...agentRequestView(row, key.workspace), url };
  }

  app.get<{ Params: { workspace: string; name: string; id: string } }>(
    '/:workspace/agents/:name/requests/:id',
    { schema: { params: RequestParams } },
    async (request) => {
      // Results stay readable after the agent stopped serving, or was deleted.
      const { grant } = await callerOf(request);
      const row = await requests.find(grant.id, request.params.name, request.params.id);
      if (!row) throw notFound(`request '${request.params.id}' of agent '${request.params.name}' not found`);
      return agentRequestView(row, grant.name);
    },
  );

  return { accept, callbackUrlOf };
}
