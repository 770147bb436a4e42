import { Type } from 'typebox';
import { PROVISIONING_STATUSES, TENANT_MAX_LENGTH, TENANT_PATTERN, type ProvisioningStatus } from '../../../domain/integrations/provisioning';
import { DisplayName, Labels, ResourceName } from '../common-schemas';

const IntegrationName = Type.String({ minLength: 1, maxLength: 63, description: "A name from the catalog (GET /v0/integrations), e.g. 'email' or 'openai'." });

const SecretMap = Type.Record(Type.String({ maxLength: 128 }), Type.String({ minLength: 1, maxLength: 16_384 }), {
  maxProperties: 50,
  description: 'Key/value secrets of the connection, e.g. CLIENT_ID, CLIENT_SECRET, REFRESH_TOKEN for email, API_KEY for openai. Never returned in clear.',
});

/** Read-only metadata sent back by clients (workspace, createdAt, ...) is accepted and ignored. */
const MetadataInput = Type.Object({ name: ResourceName, displayName: DisplayName, labels: Type.Optional(Labels) }, { additionalProperties: true });

export const ConnectionCreate = Type.Object(
  { metadata: MetadataInput, spec: Type.Object({ integration: IntegrationName, secret: SecretMap }, { additionalProperties: false }) },
  { additionalProperties: true },
);

/**
 * An update replaces display name, labels and the secret map. Without spec.secret the secrets
 * stay as they are; a masked value sent back unchanged keeps the stored secret.
 */
export const ConnectionUpdate = Type.Object(
  {
    metadata: MetadataInput,
    spec: Type.Optional(Type.Object({ integration: Type.Optional(IntegrationName), secret: Type.Optional(SecretMap) }, { additionalProperties: false })),
  },
  { additionalProperties: true },
);

export const Connection = Type.Object({
  metadata: Type.Object({
    name: Type.String(),
    displayName: Type.String(),
    labels: Type.Record(Type.String(), Type.String()),
    workspace: Type.String(),
    tenant: Type.Optional(Type.String({ description: 'Set when a provisioning created the connection.' })),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
    createdBy: Type.Union([Type.String(), Type.Null()]),
    updatedBy: Type.Union([Type.String(), Type.Null()]),
  }),
  spec: Type.Object({
    integration: Type.String(),
    secret: Type.Record(Type.String(), Type.String(), { description: 'Masked: never the value, at most its last four characters.' }),
  }),
  status: Type.Optional(
    Type.Object(
      {
        rollout: Type.Array(
          Type.Object({
            function: Type.String(),
            revision: Type.Integer(),
            status: Type.Unsafe<'DEPLOYED' | 'FAILED' | 'DELETED' | 'PENDING'>({ type: 'string', enum: ['DEPLOYED', 'FAILED', 'DELETED', 'PENDING'] }),
            message: Type.Optional(Type.String()),
          }),
        ),
      },
      {
        description:
          'In the answer to a PUT that changed the secrets: each function bound to the connection, the revision that restarted it with them, ' +
          'and how that ended (PENDING: still deploying after 60 s).',
      },
    ),
  ),
});

export const Integration = Type.Object({
  name: Type.String(),
  displayName: Type.String(),
  description: Type.String(),
  secrets: Type.Array(Type.Object({ name: Type.String(), required: Type.Boolean(), description: Type.String() })),
  oauth: Type.Optional(
    Type.Object({
      authorizationUrl: Type.String({ description: 'Where the customer backend sends its users (step 2 of the tenant flow).' }),
      scopes: Type.Array(Type.String()),
    }, { description: 'Absent for an integration without a tenant flow (a model provider).' }),
  ),
  mcp: Type.Optional(Type.Object({ tools: Type.Array(Type.String()) }, { description: 'The MCP server a bound function runs; absent for a model provider.' })),
});

export const ProvisioningCreate = Type.Object(
  {
    integration: IntegrationName,
    tenant: Type.String({
      pattern: TENANT_PATTERN,
      maxLength: TENANT_MAX_LENGTH,
      description: "The customer's key for its end user; the connection and function are named '<integration>-<tenant>'.",
    }),
    code: Type.String({ minLength: 1, maxLength: 4096, description: 'The authorization code the provider sent to redirectUri.' }),
    redirectUri: Type.String({ minLength: 1, maxLength: 2048, description: 'Exactly the redirect_uri of the authorization request.' }),
    clientId: Type.String({ minLength: 1, maxLength: 1024 }),
    clientSecret: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false },
);

export const Provisioning = Type.Object({
  id: Type.String(),
  workspace: Type.String(),
  integration: Type.String(),
  tenant: Type.String(),
  status: Type.Unsafe<ProvisioningStatus>({ type: 'string', enum: [...PROVISIONING_STATUSES] }),
  result: Type.Optional(
    Type.Object({
      connectionName: Type.String(),
      functionName: Type.String(),
      mcpUrl: Type.String({ description: '{run_url}/{workspace}/functions/{name}/mcp' }),
    }),
  ),
  error: Type.Optional(Type.String()),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});

export const ProvisioningListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'At most this many runs, newest first (default 100).' })),
    tenant: Type.Optional(Type.String({ pattern: TENANT_PATTERN, maxLength: TENANT_MAX_LENGTH, description: "Only this tenant's runs." })),
  },
  { additionalProperties: false },
);

export const IdParam = Type.Object({ id: Type.String({ maxLength: 100 }) });
