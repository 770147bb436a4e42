/** Resource names: lowercase letters, digits and '-', starting with a letter, at most 49 characters. */
export const NAME_PATTERN = '^[a-z][a-z0-9-]{0,48}$';
export const NAME_MAX_LENGTH = 49;
export const DISPLAY_NAME_MAX_LENGTH = 63;

const nameRegex = new RegExp(NAME_PATTERN);

export function isValidName(name: string): boolean {
  return nameRegex.test(name);
}

/** Explains why a name is invalid, naming the field, or returns undefined when it is valid. */
export function nameProblem(field: string, name: unknown): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return `${field} is required`;
  if (name.length > NAME_MAX_LENGTH) return `${field} must be at most ${NAME_MAX_LENGTH} characters`;
  if (!isValidName(name)) return `${field} must contain only lowercase letters, digits and '-', and start with a letter`;
  return undefined;
}
