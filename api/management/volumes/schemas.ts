import { Type } from 'typebox';
import { MAX_VOLUME_SIZE_MB, MIN_VOLUME_SIZE_MB } from '../../../domain/volume/volume';
import { DisplayName, Labels, ResourceName } from '../common-schemas';
import { NodeField, envelopeSchema } from '../resources/envelope';

export const VolumeSpecSchema = Type.Object(
  {
    size: Type.Integer({ minimum: MIN_VOLUME_SIZE_MB, maximum: MAX_VOLUME_SIZE_MB, description: 'Size in MB; it may grow, never shrink.' }),
  },
  { additionalProperties: false },
);

export const VolumeInput = Type.Object(
  {
    metadata: Type.Object({ name: ResourceName, displayName: Type.Optional(DisplayName), labels: Type.Optional(Labels) }, { additionalProperties: true }),
    spec: VolumeSpecSchema,
  },
  { additionalProperties: true },
);

export const VolumeEnvelope = envelopeSchema({ node: NodeField });
