import { Type } from 'typebox';

/** A registry image's pull, on the image's tags and on the status of sandboxes waiting for it. */
export const PullProgressSchema = Type.Object(
  {
    bytesDone: Type.Integer({ description: 'Bytes of layers received (those already on the node count as received: they are not fetched again).' }),
    layersDone: Type.Integer({ description: 'Layers unpacked while they came.' }),
    bytesTotal: Type.Union([Type.Integer(), Type.Null()], { description: "The layers' bytes, from the manifest read before the copy; null when it could not be read." }),
    layersTotal: Type.Union([Type.Integer(), Type.Null()], { description: 'The layers of the manifest.' }),
    percent: Type.Union([Type.Integer({ minimum: 0, maximum: 100 }), Type.Null()], { description: 'Whole percent of bytesTotal: at most 99 while pulling, 100 once READY.' }),
  },
  { description: "A registry image's pull: how far, and of how much." },
);

const Event = Type.Object({ type: Type.String(), message: Type.String(), time: Type.String() });

/** One tag of an image: what it is on the node (digest, size) and where its build stands. */
export const ImageTag = Type.Object(
  {
    name: Type.String({ description: 'The tag.' }),
    reference: Type.String({ description: "What spec.runtime.image names it by: 'name:tag'." }),
    state: Type.Union([Type.Literal('PULLING'), Type.Literal('BUILDING'), Type.Literal('READY'), Type.Literal('FAILED')]),
    reason: Type.Union([Type.String(), Type.Null()], { description: 'Why the last build failed.' }),
    digest: Type.Union([Type.String(), Type.Null()], { description: "The image's manifest digest: its identity, by content." }),
    sizeBytes: Type.Union([Type.Integer(), Type.Null()], { description: 'Bytes the node stores for it (layers and unpacked files), shared with every tag of the same digest.' }),
    progress: Type.Union([
      Type.Object({ step: Type.Integer(), steps: Type.Integer(), instruction: Type.String(), cached: Type.Boolean() }, { description: "A build's step." }),
      PullProgressSchema,
      Type.Null(),
    ]),
    events: Type.Array(Event),
    createdAt: Type.Union([Type.String(), Type.Null()]),
    updatedAt: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);

export const Image = Type.Object(
  {
    metadata: Type.Object({
      name: Type.String(),
      workspace: Type.String(),
      builtIn: Type.Boolean({ description: "The platform's own image: read-only, shared by every workspace." }),
      registry: Type.Optional(Type.Boolean({ description: "An image of a registry the workspace's resources pulled (its name holds the registry's host; URL-encoded in paths)." })),
    }),
    spec: Type.Object({ tags: Type.Array(ImageTag) }),
  },
  { additionalProperties: false },
);

export const ImageParams = Type.Object({ name: Type.String({ maxLength: 200 }) });
export const ImageTagParams = Type.Object({ name: Type.String({ maxLength: 200 }), tag: Type.String({ maxLength: 200 }) });
export const BuildQuery = Type.Object({ tag: Type.Optional(Type.String({ maxLength: 200, description: "The tag built; 'latest' by default." })) }, { additionalProperties: false });
