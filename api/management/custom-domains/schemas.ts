import { Type } from 'typebox';
import { MAX_DOMAIN_LENGTH } from '../../../domain/custom-domain/custom-domain';
import { DisplayName, Labels, ResourceName } from '../common-schemas';
import { envelopeSchema } from '../resources/envelope';

export const CustomDomainSpecSchema = Type.Object(
  {
    domain: Type.String({
      minLength: 1,
      maxLength: MAX_DOMAIN_LENGTH,
      description: "Lowercase DNS name, no port, no IP address, e.g. 'api.example.com'; unique across the platform.",
    }),
    target: Type.Object(
      {
        kind: Type.Union([Type.Literal('agent'), Type.Literal('model'), Type.Literal('function')], { description: 'The kind of workload served.' }),
        name: ResourceName,
      },
      { additionalProperties: false, description: 'The workload of this workspace that the domain serves; it may be created later.' },
    ),
  },
  { additionalProperties: false },
);

export const CustomDomainInput = Type.Object(
  {
    metadata: Type.Object({ name: ResourceName, displayName: Type.Optional(DisplayName), labels: Type.Optional(Labels) }, { additionalProperties: true }),
    spec: CustomDomainSpecSchema,
  },
  { additionalProperties: true },
);

export const CustomDomainEnvelope = envelopeSchema({});
