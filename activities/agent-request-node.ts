import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import http from 'node:http';
import type { Pool } from 'pg';
import { AgentRequestStore, agentRequestView, type AgentAnswer } from '../store/agent-requests';
import { WorkflowTouches, touchIntervalMs } from '../store/workflow-touches';
import { CallbackSecretStore } from '../store/callback-secrets';
import { ASYNC_RESULT_BODY_LIMIT, type AgentRequestKey, type AgentRequestStatus } from '../domain/agents/async-requests';
import { signCallback } from '../domain/callback-signature';
import type { HangarConfig } from '../domain/config';
import { loadMasterKey } from '../store/master-key';
import { SecretBox } from '../domain/secret-box';
import { deploymentWorkflowId, type WorkloadScaleState } from '../domain/workloads/workload';
import { postCallback } from './callback';

/** Answers worth another attempt: the agent (or what stands before it) is briefly unavailable. */
const TRANSIENT_STATUSES = new Set([502, 503, 504]);
const HEARTBEAT_MS = 1_000;

const retryable = (message: string) => ApplicationFailure.retryable(message, 'AgentUnavailable');

/**
 * One POST to the agent's serving revision over its socket, heartbeating while it waits (a dead
 * worker is noticed, and the attempt runs again elsewhere) and abandoned when the activity is
 * cancelled. The answer is read up to the limit; `tooLarge` says it went beyond.
 */
function requestAgent(socketPath: string, path: string, headers: Record<string, string>, body: Buffer): Promise<AgentAnswer & { tooLarge: boolean }> {
  const context = Context.current();
  return new Promise((resolve, reject) => {
    const heartbeat = setInterval(() => context.heartbeat(), HEARTBEAT_MS);
    const done = () => clearInterval(heartbeat);
    const request = http.request({ socketPath, method: 'POST', path, headers: { ...headers, 'content-length': String(body.length) }, signal: context.cancellationSignal });
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      response.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes <= ASYNC_RESULT_BODY_LIMIT) chunks.push(chunk);
        else response.destroy();
      });
      const answer = () => ({ statusCode: response.statusCode ?? 502, contentType: response.headers['content-type'] ?? null, body: Buffer.concat(chunks), tooLarge: bytes > ASYNC_RESULT_BODY_LIMIT });
      response.on('end', () => {
        done();
        resolve(answer());
      });
      response.on('close', () => {
        done();
        if (bytes > ASYNC_RESULT_BODY_LIMIT) resolve(answer());
        else if (!response.complete) reject(retryable('the agent closed the connection before its answer was complete'));
      });
    });
    request.on('error', (err) => {
      done();
      if (context.cancellationSignal.aborted) reject(err);
      else reject(retryable(`the agent could not be reached: ${(err as NodeJS.ErrnoException).code ?? err.message}`));
    });
    request.end(body);
  });
}

/**
 * The node's side of async agent requests: calling the agent from the host its revision runs on,
 * and sending the signed callback (from this host, as port callbacks do).
 */
export function createAgentRequestNodeActivities({ config, pg, temporal }: { config: HangarConfig; pg: Pool; temporal: Client }) {
  const requests = new AgentRequestStore(pg);
  // An agent that scales to zero is kept awake while a request runs, as the gateway does.
  const touches = new WorkflowTouches((workflowId, signal, at) => temporal.workflow.getHandle(workflowId).signal(signal, at), () => undefined, touchIntervalMs(config.workloadIdleSeconds));
  const secrets = new CallbackSecretStore(pg, new SecretBox(loadMasterKey(config)));

  return {
    /**
     * Calls the agent with the stored request and records its answer. A request that already has
     * its result (a retry after the answer was written) is not sent again. No serving revision,
     * an unreachable one and 502/503/504 are transient; the workflow's retry policy bounds them.
     */
    async callAgent(key: AgentRequestKey): Promise<{ status: AgentRequestStatus }> {
      if (!(await requests.markRunning(key.id))) {
        const row = await requests.get(key.id);
        if (!row) throw ApplicationFailure.nonRetryable('the request no longer exists', 'AgentRequestGone');
        return { status: row.status };
      }
      const row = await requests.get(key.id);
      const body = await requests.body(key.id);
      if (!row || !body) throw ApplicationFailure.nonRetryable('the request no longer exists', 'AgentRequestGone');
      const { rows } = await pg.query<{ status: string; socket_path: string | null; scale: WorkloadScaleState | null }>(
        `SELECT status, state #>> '{serving,socketPath}' AS socket_path, state ->> 'scale' AS scale FROM resources WHERE id = $1`,
        [key.agentId],
      );
      if (!rows[0]) throw ApplicationFailure.nonRetryable(`agent '${key.agentName}' was deleted`, 'AgentGone');
      let socketPath = rows[0].socket_path;
      if (!socketPath) throw retryable(`agent '${key.agentName}' is ${rows[0].status}; no revision serves it`);
      let release: (() => void) | undefined;
      if (rows[0].scale) {
        const workflowId = deploymentWorkflowId(key.workspace, 'agents', key.agentName);
        if (rows[0].scale === 'SCALED_TO_ZERO') {
          socketPath = await temporal.workflow
            .getHandle(workflowId)
            .executeUpdate<string, []>('wake')
            .catch((err: Error) => {
              const reason = err.cause instanceof Error ? err.cause.message : err.message;
              throw retryable(`agent '${key.agentName}' was scaled to zero and did not start: ${reason}`);
            });
        }
        release = touches.hold(workflowId);
      }
      // The request id lets an agent recognise a request sent again after an interrupted attempt.
      const answer = await requestAgent(socketPath, row.path, { ...row.headers, 'idempotency-key': key.id }, body).finally(() => release?.());
      if (TRANSIENT_STATUSES.has(answer.statusCode)) throw retryable(`the agent answered ${answer.statusCode}`);
      if (answer.tooLarge) {
        await requests.recordFailure(key.id, `the agent's answer (status ${answer.statusCode}) is larger than the limit of ${ASYNC_RESULT_BODY_LIMIT} bytes`);
      } else {
        await requests.recordAnswer(key.id, answer);
      }
      return { status: (await requests.get(key.id))?.status ?? 'failed' };
    },

    /**
     * One attempt at the callback: the request's view, signed with the workspace's current secret
     * over a fresh timestamp; the Idempotency-Key (the request id) is the same on every attempt.
     */
    async deliverAgentRequestCallback(key: AgentRequestKey): Promise<{ status: number }> {
      const row = await requests.get(key.id);
      if (!row?.callback_url) throw ApplicationFailure.nonRetryable('the request or its callback no longer exists', 'CallbackRejected');
      const body = JSON.stringify(agentRequestView(row, key.workspace, { withCallback: false }));
      const { secret } = await secrets.current(key.workspaceId);
      return postCallback(row.callback_url, body, { ...signCallback(secret, body), 'idempotency-key': key.id, 'user-agent': 'hangar-agent-callback/1' });
    },
  };
}

export type AgentRequestNodeActivities = ReturnType<typeof createAgentRequestNodeActivities>;
