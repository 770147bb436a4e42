import { Type } from 'typebox';
import { DISPLAY_NAME_MAX_LENGTH, NAME_MAX_LENGTH, NAME_PATTERN } from '../../domain/names';

export const ResourceName = Type.String({
  pattern: NAME_PATTERN,
  maxLength: NAME_MAX_LENGTH,
  description: "Lowercase letters, digits and '-', starting with a letter, at most 49 characters.",
});
export const DisplayName = Type.String({ minLength: 1, maxLength: DISPLAY_NAME_MAX_LENGTH });
export const Labels = Type.Record(Type.String({ maxLength: 63 }), Type.String({ maxLength: 255 }), {
  description: 'Free string labels.',
});

export const ErrorBody = Type.Object(
  { error: Type.String(), message: Type.String() },
  { additionalProperties: true, description: 'Every error: a short code and a sentence for people.' },
);

/** Error responses every authenticated route can give, for the OpenAPI document. */
export const commonErrors = {
  400: ErrorBody,
  401: ErrorBody,
  403: ErrorBody,
  404: ErrorBody,
};

export const NameParam = Type.Object({ name: Type.String({ maxLength: 200 }) });
