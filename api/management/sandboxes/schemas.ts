import { Type } from 'typebox';
import { DURATION_PATTERN } from '../../../domain/duration';
import { DisplayName, Labels, ResourceName } from '../common-schemas';
import { NodeField, envelopeSchema } from '../resources/envelope';
import { NetworkSpecSchema } from '../network-schema';
import { PullProgressSchema } from '../images/schemas';

/** A date-time as RFC 3339 writes it (what `Date.toISOString()` gives). */
export const RFC3339_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})$';
/** A region goes into a host name or path of the sandbox URL: a DNS label. */
const REGION_PATTERN = '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$';

export const Env = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 255 }),
    value: Type.String({ maxLength: 32_768 }),
    secret: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

const Port = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 63 })),
    target: Type.Integer({ minimum: 1, maximum: 65_535 }),
    protocol: Type.Optional(Type.Union([Type.Literal('HTTP'), Type.Literal('TCP')])),
  },
  { additionalProperties: false },
);

const ExpirationPolicy = Type.Object(
  {
    type: Type.Union([Type.Literal('ttl-idle'), Type.Literal('ttl-max-age'), Type.Literal('date')]),
    value: Type.String({ maxLength: 64 }),
    action: Type.Literal('delete'),
  },
  { additionalProperties: false },
);

const VolumeMount = Type.Object(
  {
    name: ResourceName,
    mountPath: Type.String({ pattern: '^/[^\\u0000]*$', maxLength: 1_024 }),
    readOnly: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const SandboxSpecSchema = Type.Object(
  {
    region: Type.Optional(Type.String({ pattern: REGION_PATTERN, description: 'Fills {region} in the sandbox URL template; the platform region by default.' })),
    runtime: Type.Optional(
      Type.Object(
        {
          // A name of up to 255 characters, a tag of up to 128 and a sha256 digest: 455 at most.
          image: Type.Optional(Type.String({ maxLength: 512, description: "Image: 'base-image' by default (Debian's tree with a shell, Python 3, Node, git and ripgrep, built by each node at its start; recorded in the stored spec), 'base' (the node's own folders), an image the workspace built, name[:tag] (PUT /v0/images/{name}/build), or an OCI image of a registry named with its host, [registry/][namespace/]name[:tag|@digest], pulled onto the node before the start." })),
          registryConnection: Type.Optional(
            Type.String({ maxLength: 200, description: "Integration connection (integration 'oci-registry') whose credentials pull the image from its private registry." }),
          ),
          memory: Type.Optional(Type.Integer({ minimum: 64, maximum: 65_536, description: 'Memory limit in MB (enforced).' })),
          envs: Type.Optional(Type.Array(Env, { maxItems: 200 })),
          ports: Type.Optional(Type.Array(Port, { maxItems: 50 })),
          ttl: Type.Optional(
            Type.Union([Type.String({ pattern: DURATION_PATTERN }), Type.Null()], { description: 'Maximum age, e.g. "24h" (units s, m, h, d, w); null removes it.' }),
          ),
          expires: Type.Optional(Type.String({ pattern: RFC3339_PATTERN, description: 'Absolute expiry (RFC 3339, in the future); the sandbox is deleted then, like at its ttl.' })),
          snapshotEnabled: Type.Optional(Type.Boolean({ description: 'Stored and shown back; standby here always keeps the memory.' })),
          generation: Type.Optional(Type.String({ maxLength: 32, description: 'Sent by the reference SDK; accepted and ignored.' })),
        },
        { additionalProperties: false },
      ),
    ),
    lifecycle: Type.Optional(
      Type.Union([Type.Object({ expirationPolicies: Type.Optional(Type.Array(ExpirationPolicy, { maxItems: 10 })) }, { additionalProperties: false }), Type.Null()], {
        description: 'Expiration policies; null removes them.',
      }),
    ),
    volumes: Type.Optional(Type.Array(VolumeMount, { maxItems: 20 })),
    network: Type.Optional(NetworkSpecSchema),
  },
  { additionalProperties: false },
);

/** `?createIfNotExist=true` (as the reference SDK's createIfNotExists sends it): the existing sandbox of that name, if it lives, instead of a 409. */
export const CreateQuery = Type.Object({
  createIfNotExist: Type.Optional(Type.Boolean({ description: 'true: answer the sandbox of that name if it exists (and is not failed or going) instead of 409.' })),
});

export const SandboxInput = Type.Object(
  {
    metadata: Type.Object({ name: ResourceName, displayName: Type.Optional(DisplayName), labels: Type.Optional(Labels) }, { additionalProperties: true }),
    spec: Type.Optional(SandboxSpecSchema),
  },
  { additionalProperties: true },
);

export const SandboxEnvelope = envelopeSchema({
  node: NodeField,
  state: Type.Union([Type.Literal('RUNNING'), Type.Literal('STANDBY'), Type.Null()], {
    description: 'RUNNING or STANDBY once deployed; null before.',
  }),
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  expiresIn: Type.Union([Type.Integer(), Type.Null()], { description: 'Seconds until a ttl or expiration policy deletes it.' }),
  network: Type.Union([Type.Object({ bytesIn: Type.Integer(), bytesOut: Type.Integer() }), Type.Null()], {
    description: "Bytes its outbound connections carried in and out over its life (the egress proxy's payload count, updated every few seconds); null without outbound network.",
  }),
  image: Type.Union(
    [
      Type.Object({
        reference: Type.String(),
        pull: Type.Union([Type.Literal('PULLING'), Type.Literal('PULLED'), Type.Literal('BUILDING'), Type.Literal('BUILT'), Type.Literal('PRESENT'), Type.Literal('FAILED')]),
        digest: Type.Union([Type.String(), Type.Null()]),
        progress: Type.Union([PullProgressSchema, Type.Null()]),
        message: Type.Union([Type.String(), Type.Null()]),
      }),
      Type.Null(),
    ],
    {
      description:
        "Its image on its node: one of a registry PULLING (with progress and a message: 'pulling image ...: 4.2 of 6.0 MB received (70 %), 0 of 1 layers unpacked') then PULLED (progress at 100 %); base-image BUILDING (the node builds it from Debian's packages) then BUILT; PRESENT (already there) or FAILED; null for the host's own image.",
    },
  ),
});
