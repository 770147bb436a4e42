import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Pool } from 'pg';
import type { HangarConfig } from '../domain/config';
import { NODE_LOST_SIGNAL, sandboxWorkflowId } from '../domain/sandbox/sandbox';
import { deploymentWorkflowId } from '../domain/workloads/workload';
import { abandonSandboxes, abandonedSandboxes } from '../store/abandoned-sandboxes';
import { platformNodes } from '../store/nodes';
import { ResourceStore, type ResourceRow } from '../store/resources';
import { StateHistory } from '../store/state-history';
import { placementCandidate } from './node-placement';

/** A sandbox the watch wrote off: which, on which node, since when. */
export interface LostSandbox {
  id: string;
  nodeId: string;
  lastHeartbeatAt: number;
}

/**
 * What the platform does about a node that is LOST (silent past HANGAR_NODE_LOST_SECONDS), run
 * by the node loss watch on the control worker: each sandbox placed there that was starting or
 * running is written off. In this order, each step safe to repeat, so a pass that dies half-way
 * is finished by the next: the node is told to remove it if it comes back (before the node takes
 * work again, so it never runs twice); its lifecycle workflow hears that its node is lost (it
 * stops asking the node, meters its compute up to the last heartbeat); its row goes FAILED with
 * a Warning event saying why, and its state history ends at the last heartbeat. One that was
 * being deleted is not marked: told the same, its workflow deletes its record without the node.
 */
export function createNodeLossActivities({ pg, config, temporal }: { pg: Pool; config: HangarConfig; temporal: Client }) {
  const store = new ResourceStore(pg);
  const history = new StateHistory(pg);

  async function writeOff(sandbox: ResourceRow, nodeId: string, lastHeartbeat: Date): Promise<boolean> {
    const known = (await abandonedSandboxes(pg, nodeId)).includes(sandbox.id);
    await abandonSandboxes(pg, nodeId, [sandbox.id]);
    try {
      await temporal.workflow.getHandle(sandboxWorkflowId(sandbox.workspace, sandbox.name)).signal(NODE_LOST_SIGNAL, lastHeartbeat.getTime());
    } catch (err) {
      // A sandbox whose workflow has ended has nothing to stop.
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
    // One being deleted goes on going: its workflow deletes the record without the node (told
    // again each pass until it has: the signal is all it needs, and repeating it changes nothing).
    if (sandbox.status === 'DELETING') {
      await history.end(sandbox.id, lastHeartbeat.getTime());
      return !known;
    }
    const message = `its node '${nodeId}' is LOST (last heard from at ${lastHeartbeat.toISOString()}): the sandbox is gone; delete it`;
    const nodeLost = { node: nodeId, lastHeartbeatAt: lastHeartbeat.toISOString() };
    // From the status it was read in: a sandbox deleted meanwhile stays DELETING.
    if (!(await store.transition(sandbox.id, 'FAILED', { type: 'Warning', message }, { nodeLost }, sandbox.status))) return false;
    await history.end(sandbox.id, lastHeartbeat.getTime());
    return true;
  }

  const lostNodes = async () => (await platformNodes(pg, config.taskQueue)).filter((row) => placementCandidate(row, config.nodeLostSeconds).state === 'LOST');

  return {
    /**
     * One pass over the platform's nodes: each deployment whose serving revision is placed on a
     * LOST node is told so (its workflow moves the revision, once, and starts it elsewhere).
     * Told again each pass until the revision has moved: a signal lost with a crash is sent
     * again, and a repeated one changes nothing. Answers the workloads told.
     */
    async tellDeploymentsOfLostNodes(): Promise<{ resourceId: string; revision: number; nodeId: string }[]> {
      const told: { resourceId: string; revision: number; nodeId: string }[] = [];
      for (const node of await lostNodes()) {
        for (const workload of await servingRevisionsOn(pg, node.id)) {
          try {
            await temporal.workflow.getHandle(deploymentWorkflowId(workload.workspace, workload.kind, workload.name)).signal('nodeLost', workload.revision, node.id);
            told.push({ resourceId: workload.id, revision: workload.revision, nodeId: node.id });
          } catch (err) {
            // A deployment whose workflow has ended runs nothing.
            if (!(err instanceof WorkflowNotFoundError)) throw err;
          }
        }
      }
      return told;
    },

    /** One pass over the platform's nodes: the sandboxes of each LOST one are written off. Answers those it wrote off. */
    async writeOffSandboxesOfLostNodes(): Promise<LostSandbox[]> {
      const lost = await lostNodes();
      const written: LostSandbox[] = [];
      for (const node of lost) {
        for (const sandbox of await sandboxesOn(pg, node.id)) {
          if (await writeOff(sandbox, node.id, node.heartbeat_at)) written.push({ id: sandbox.id, nodeId: node.id, lastHeartbeatAt: node.heartbeat_at.getTime() });
        }
      }
      return written;
    },
  };
}

/** The sandboxes placed on `nodeId` that are starting, running or being deleted. */
async function sandboxesOn(pg: Pool, nodeId: string): Promise<ResourceRow[]> {
  const { rows } = await pg.query<ResourceRow>(
    `SELECT r.id, w.name AS workspace, r.name, r.status FROM resources r JOIN workspaces w ON w.id = r.workspace_id
      WHERE r.kind = 'sandboxes' AND r.node_id = $1 AND r.status IN ('DEPLOYING', 'DEPLOYED', 'DELETING') ORDER BY r.id`,
    [nodeId],
  );
  return rows;
}

/** The workloads whose serving revision is placed on `nodeId`. */
async function servingRevisionsOn(pg: Pool, nodeId: string): Promise<{ id: string; workspace: string; kind: string; name: string; revision: number }[]> {
  const { rows } = await pg.query<{ id: string; workspace: string; kind: string; name: string; revision: number }>(
    `SELECT r.id, w.name AS workspace, r.kind, r.name, wr.revision FROM resources r
       JOIN workspaces w ON w.id = r.workspace_id
       JOIN workload_revisions wr ON wr.resource_id = r.id AND wr.revision = (r.state #>> '{serving,revision}')::int
      WHERE wr.node_id = $1 ORDER BY r.id`,
    [nodeId],
  );
  return rows;
}

export type NodeLossActivities = ReturnType<typeof createNodeLossActivities>;
