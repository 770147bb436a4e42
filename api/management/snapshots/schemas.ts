import { Type } from 'typebox';
import { ResourceName } from '../common-schemas';
import { Env } from '../sandboxes/schemas';

const Source = Type.Object(
  {
    name: Type.String({ maxLength: 200, description: 'The sandbox captured.' }),
    kind: Type.Optional(Type.Literal('sandbox', { description: 'The only kind that can be captured.' })),
  },
  { additionalProperties: false },
);

/** POST /v0/snapshots (`source` required) and POST /v0/sandboxes/{name}/snapshots (the path names it). */
export const SnapshotInput = Type.Object(
  {
    name: Type.Optional(ResourceName),
    source: Type.Optional(Source),
  },
  { additionalProperties: false },
);

export const ForkInput = Type.Object(
  {
    targetName: ResourceName,
    targetType: Type.Optional(Type.Union([Type.Literal('sandbox'), Type.Literal('application')], { description: "Only 'sandbox' is offered." })),
    snapshotId: Type.Optional(Type.String({ maxLength: 200, description: 'Fork from this snapshot (its id or name) instead of the source as it is now.' })),
    envs: Type.Optional(Type.Array(Env, { maxItems: 200, description: "On top of the source's: a variable it has takes this value, a new one is added." })),
    // The reference's fields for a fork into an application; refused with a reason (see the service).
    port: Type.Optional(Type.Integer()),
    traffic: Type.Optional(Type.Integer()),
    customDomain: Type.Optional(Type.String()),
    prefix: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

export const ForkResult = Type.Object({
  name: Type.String(),
  snapshotId: Type.String(),
  type: Type.Literal('sandbox'),
});

export const RestoreResult = Type.Object({
  name: Type.String({ description: 'The sandbox restored.' }),
  snapshotId: Type.String({ description: 'The snapshot it is put back to.' }),
});

export const Snapshot = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    workspace: Type.String(),
    status: Type.Union([Type.Literal('pending'), Type.Literal('ready'), Type.Literal('failed')]),
    message: Type.Union([Type.String(), Type.Null()], { description: 'Why the capture failed.' }),
    createdAt: Type.String({ format: 'date-time' }),
    createdBy: Type.Union([Type.String(), Type.Null()]),
    sandboxName: Type.String(),
    source: Type.Object({ name: Type.String(), kind: Type.Literal('sandbox'), deleted: Type.Boolean() }),
    spec: Type.Object({}, { additionalProperties: true, description: 'What the source ran: image, memory, ports, region.' }),
    sizeBytes: Type.Union([Type.Integer(), Type.Null()], { description: 'The files on disk, once captured.' }),
  },
  { additionalProperties: false },
);

export const SnapshotParams = Type.Object({ name: Type.String({ maxLength: 200 }) });
export const SandboxSnapshotParams = Type.Object({ name: Type.String({ maxLength: 200 }), snapshotId: Type.String({ maxLength: 200 }) });
