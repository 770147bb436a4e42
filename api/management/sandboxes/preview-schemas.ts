import { Type } from 'typebox';
import { DURATION_PATTERN } from '../../../domain/duration';
import { DisplayName, ResourceName } from '../common-schemas';
import { RFC3339_PATTERN } from './schemas';

/** A prefix goes into the preview's host name or path: a DNS label short enough to carry the workspace after it. */
const PREFIX_PATTERN = '^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$';

const Headers = Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: 8_192 }), { maxProperties: 50 });

const PreviewSpecInput = Type.Object(
  {
    port: Type.Integer({ minimum: 1, maximum: 65_535, description: 'The port inside the sandbox; 443 is the sandbox API itself (a session).' }),
    public: Type.Optional(Type.Boolean({ description: 'Reachable by anyone; otherwise a preview token is needed. Default false.' })),
    prefixUrl: Type.Optional(Type.String({ pattern: PREFIX_PATTERN, description: 'Names the preview in its URL: `{prefixUrl}-{workspace}`.' })),
    requestHeaders: Type.Optional(Headers),
    responseHeaders: Type.Optional(Headers),
    ttl: Type.Optional(Type.String({ pattern: DURATION_PATTERN, description: 'Lifetime from creation, e.g. "1h".' })),
    expires: Type.Optional(Type.String({ pattern: RFC3339_PATTERN, description: 'Absolute expiry (RFC 3339, in the future).' })),
    // Shown by GET and sent back by clients that PUT what they read: accepted and ignored.
    url: Type.Optional(Type.String({ maxLength: 2_048 })),
    region: Type.Optional(Type.String({ maxLength: 63 })),
  },
  { additionalProperties: false },
);

export const PreviewInput = Type.Object(
  {
    metadata: Type.Object({ name: ResourceName, displayName: Type.Optional(DisplayName) }, { additionalProperties: true }),
    spec: PreviewSpecInput,
  },
  { additionalProperties: true },
);

export const PreviewParams = Type.Object({ name: Type.String({ maxLength: 200 }), preview: Type.String({ maxLength: 200 }) });
export const PreviewTokenParams = Type.Object({ name: Type.String({ maxLength: 200 }), preview: Type.String({ maxLength: 200 }), token: Type.String({ maxLength: 200 }) });
export const PreviewCreateQuery = Type.Object({ force: Type.Optional(Type.Boolean({ description: 'Take the URL label from a preview of this workspace holding it.' })) });

const Timestamp = Type.String({ format: 'date-time' });

export const Preview = Type.Object({
  metadata: Type.Object({
    name: Type.String(),
    url: Type.String(),
    displayName: Type.String(),
    workspace: Type.String(),
    resourceName: Type.String(),
    resourceType: Type.String(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    createdBy: Type.Union([Type.String(), Type.Null()]),
    updatedBy: Type.Union([Type.String(), Type.Null()]),
  }),
  spec: Type.Object({}, { additionalProperties: true }),
  status: Type.String({ description: 'DEPLOYED; DELETED in the answer to a delete.' }),
});

export const PreviewTokenInput = Type.Object(
  {
    metadata: Type.Optional(Type.Object({ name: Type.Optional(ResourceName) }, { additionalProperties: true })),
    spec: Type.Object({ expiresAt: Type.String({ pattern: RFC3339_PATTERN, description: 'When the token stops working (RFC 3339, in the future).' }) }, { additionalProperties: true }),
  },
  { additionalProperties: false },
);

export const PreviewToken = Type.Object({
  metadata: Type.Object({ name: Type.String(), previewName: Type.String(), resourceName: Type.String(), resourceType: Type.String(), workspace: Type.String() }),
  spec: Type.Object({ token: Type.String(), expiresAt: Timestamp, expired: Type.Boolean() }),
});
