import { Type, type TProperties } from 'typebox';
import { RESOURCE_STATUSES, type ResourceStatus } from '../../../domain/resource';
import type { ResourceRow } from '../../../store/resources';

const ResourceEvent = Type.Object({ type: Type.String(), status: Type.String(), message: Type.String(), time: Type.String() });

const Metadata = Type.Object({
  name: Type.String(),
  displayName: Type.String(),
  labels: Type.Record(Type.String(), Type.String()),
  workspace: Type.String(),
  url: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
  createdBy: Type.Union([Type.String(), Type.Null()]),
  updatedBy: Type.Union([Type.String(), Type.Null()]),
});

/** The response schema of a resource: `{metadata, spec, status, events}` plus kind-specific fields. */
export function envelopeSchema<T extends TProperties>(extra: T) {
  return Type.Object({
    metadata: Metadata,
    spec: Type.Object({}, { additionalProperties: true }),
    status: Type.Unsafe<ResourceStatus>({ type: 'string', enum: [...RESOURCE_STATUSES] }),
    events: Type.Array(ResourceEvent),
    ...extra,
  });
}

export function toEnvelope(row: ResourceRow, url: string) {
  return {
    metadata: {
      name: row.name,
      displayName: row.display_name,
      labels: row.labels,
      workspace: row.workspace,
      url,
      createdAt: row.created_at.toISOString(),
      updatedAt: row.updated_at.toISOString(),
      createdBy: row.created_by,
      updatedBy: row.updated_by,
    },
    spec: row.spec,
    status: row.status,
    events: row.events,
  };
}

/** `node` of a placed resource's envelope (sandboxes, volumes). */
export const NodeField = Type.Union([Type.String(), Type.Null()], {
  description: "The runtime node it is placed on (GET /v0/nodes lists them); null until its workflow has placed it, or for one created before placement (on the API's own node).",
});
