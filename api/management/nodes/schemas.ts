import { Type } from 'typebox';

export const Node = Type.Object({
  id: Type.String(),
  state: Type.Union([Type.Literal('READY'), Type.Literal('UNREACHABLE'), Type.Literal('LOST')], {
    description: 'READY: heard from within 10 s; UNREACHABLE: silent longer; LOST: silent past HANGAR_NODE_LOST_SECONDS.',
  }),
  drained: Type.Boolean({ description: 'Whether the operator drained it: it keeps what it runs and is given nothing new.' }),
  region: Type.String(),
  labels: Type.Record(Type.String(), Type.String()),
  taskQueue: Type.String({ description: 'The Temporal task queue its worker polls.' }),
  capacity: Type.Object({ memoryBytes: Type.Number(), cpus: Type.Integer(), diskBytes: Type.Number() }),
  load: Type.Object({
    sandboxes: Type.Integer(),
    memoryCommittedBytes: Type.Number({ description: "The memory limits of its sandboxes, summed." }),
    memoryFreeBytes: Type.Number({ description: 'Its memory less what is committed: what placement looks at.' }),
    diskFreeBytes: Type.Number(),
  }),
  startedAt: Type.String({ format: 'date-time', description: "When its current worker started." }),
  lastHeartbeatAt: Type.String({ format: 'date-time' }),
  drainedAt: Type.Optional(Type.String({ format: 'date-time' })),
});

export const NodeParams = Type.Object({ nodeId: Type.String({ maxLength: 200, description: "The node's id (HANGAR_NODE_ID of its worker)." }) });
