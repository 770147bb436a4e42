import { Type } from 'typebox';
import { BILLING_DIMENSION_NAMES, RESOURCE_TYPES } from '../../domain/billing/dimensions';
import { GROUP_BY_DIMENSIONS } from '../../domain/billing/metrics-query';
import { MAX_EVENTS_PER_REQUEST } from '../../domain/billing/usage-events';
import { RESOLUTIONS } from '../../domain/billing/time';

// Route schemas describe the API for OpenAPI. Requests are validated by core/billing instead
// (the billing routes switch schema validation off), so that messages name the parameter exactly
// and no value is coerced before it is checked.

const Time = (description: string) => Type.String({ format: 'date-time', description });

export const AccountParams = Type.Object({ accountId: Type.String({ description: 'Account that owns the workspaces queried.' }) });

export const WindowQuery = Type.Object({
  startTime: Time('Window start, inclusive, RFC 3339 UTC. Required.'),
  endTime: Time('Window end, exclusive, RFC 3339 UTC. Required.'),
});

export const MetricsQuerySchema = Type.Object({
  startTime: Time('Window start, inclusive, RFC 3339 UTC. Required.'),
  endTime: Time('Window end, exclusive, RFC 3339 UTC. Required.'),
  resolution: Type.Optional(
    Type.Union(
      RESOLUTIONS.map((r) => Type.Literal(r)),
      { description: 'Bucket size; chosen from the window length when omitted. Caps: hourly 7 days, daily 90 days, weekly 1 year.' },
    ),
  ),
  groupBy: Type.Optional(
    Type.String({ description: `Up to 3 comma-separated dimensions among ${GROUP_BY_DIMENSIONS.join(', ')}. workspace: account admins only.` }),
  ),
  workspace: Type.Optional(Type.String({ description: 'Restrict to one workspace. Account admins only.' })),
  resourceType: Type.Optional(Type.Union(RESOURCE_TYPES.map((t) => Type.Literal(t)))),
  resourceName: Type.Optional(Type.String()),
  resourceUuid: Type.Optional(Type.String()),
  billingDimension: Type.Optional(Type.Union(BILLING_DIMENSION_NAMES.map((d) => Type.Literal(d)))),
  limit: Type.Optional(Type.Integer({ minimum: 1, default: 100, description: 'Groups per page; larger values are clamped to 100.' })),
  cursor: Type.Optional(Type.String({ description: 'meta.nextCursor of the previous page, with the same other parameters.' })),
});

const Usage = Type.Object(
  { gbs: Type.Optional(Type.Number()), count: Type.Optional(Type.Number()), hours: Type.Optional(Type.Number()) },
  { description: 'Quantity by unit (gbs = GB-seconds, count = events, hours = active hours); units are never added together.' },
);

const TimeseriesPoint = Type.Object({
  timestamp: Type.String({ format: 'date-time', description: 'Start of the bucket.' }),
  cost: Type.Number({ description: 'USD.' }),
  usage: Type.Optional(Usage),
});

const MetricsEntry = Type.Object({
  workspace: Type.Optional(Type.String()),
  resourceType: Type.Optional(Type.String()),
  resourceName: Type.Optional(Type.String()),
  resourceUuid: Type.Optional(Type.String()),
  billingDimension: Type.Optional(Type.String()),
  summary: Type.Object({ cost: Type.Number(), usage: Type.Optional(Usage) }),
  timeseries: Type.Array(TimeseriesPoint),
});

export const MetricsResponseSchema = Type.Object({
  startTime: Type.String({ format: 'date-time' }),
  endTime: Type.String({ format: 'date-time' }),
  resolution: Type.String(),
  summary: Type.Object({ totalCost: Type.Number(), totalUsage: Type.Optional(Usage) }),
  data: Type.Array(MetricsEntry),
  meta: Type.Object({ hasMore: Type.Boolean(), nextCursor: Type.String() }),
});

export const EnumResponse = Type.Object({ values: Type.Array(Type.String()) });

const UsageEventSchema = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 128, description: 'Idempotency key: a re-sent id counts once.' }),
  timestamp: Type.String({ format: 'date-time', description: 'RFC 3339; at most 5 minutes in the future.' }),
  workspace: Type.String(),
  resourceType: Type.Union(RESOURCE_TYPES.map((t) => Type.Literal(t))),
  resourceName: Type.String(),
  resourceUuid: Type.Optional(Type.String()),
  billingDimension: Type.Union(BILLING_DIMENSION_NAMES.map((d) => Type.Literal(d))),
  quantity: Type.Number({ minimum: 0, description: 'In the unit of the billing dimension.' }),
});

export const UsageEventsBody = Type.Object({ events: Type.Array(UsageEventSchema, { maxItems: MAX_EVENTS_PER_REQUEST }) });

export const UsageEventsAccepted = Type.Object({
  accepted: Type.Integer({ description: 'New events, durably stored.' }),
  duplicates: Type.Integer({ description: 'Events whose id was already accepted with the same payload.' }),
});
