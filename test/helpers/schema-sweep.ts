/**
 * Walks a route's JSON schema (TypeBox schemas are JSON schema) to build, for each field, a body
 * that is valid but for a value of a wrong JSON type in that field. Used by the schema sweep
 * (test/integration/api/body-types.test.ts), which sends every such body to the real app.
 */

export interface JsonSchema {
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  patternProperties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  minItems?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
}

/** The kinds of JSON value a field can hold; integers and other numbers apart, as schemas tell them apart. */
export type JsonKind = 'string' | 'integer' | 'fraction' | 'boolean' | 'null' | 'object' | 'array';
const ALL_KINDS: readonly JsonKind[] = ['string', 'integer', 'fraction', 'boolean', 'null', 'object', 'array'];

/** One field of a body: where it is (keys and array indexes) and its schema. */
export interface FieldSite {
  path: (string | number)[];
  schema: JsonSchema;
}

/** A body with a value of the wrong kind in one field, and the name the 400 must give that field. */
export interface Mutation {
  field: string;
  kind: JsonKind;
  body: unknown;
}

const branches = (schema: JsonSchema): JsonSchema[] | undefined => schema.anyOf ?? schema.oneOf;

function kindOf(value: unknown): JsonKind {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'fraction';
  return typeof value as JsonKind;
}

/** The kinds a schema accepts; undefined when it does not constrain the type. */
export function acceptedKinds(schema: JsonSchema): Set<JsonKind> | undefined {
  if (schema.const !== undefined) return new Set([kindOf(schema.const)]);
  if (schema.enum) return new Set(schema.enum.map(kindOf));
  const options = branches(schema);
  if (options) {
    const kinds = new Set<JsonKind>();
    for (const option of options) {
      const accepted = acceptedKinds(option);
      if (!accepted) return undefined;
      accepted.forEach((kind) => kinds.add(kind));
    }
    return kinds;
  }
  if (schema.type === undefined) return undefined;
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  return new Set(types.flatMap((type): JsonKind[] => (type === 'number' ? ['integer', 'fraction'] : [type as JsonKind])));
}

// Strings tried, in order, for a string field: the first its schema accepts is used.
const STRING_CANDIDATES = ['a', '/a', '1h', '2026-01-01T00:00:00Z'];

function stringAccepted(schema: JsonSchema, text: string): boolean {
  if (schema.pattern && !new RegExp(schema.pattern, 'u').test(text)) return false;
  if (schema.minLength !== undefined && text.length < schema.minLength) return false;
  if (schema.maxLength !== undefined && text.length > schema.maxLength) return false;
  if (schema.format === 'date-time' && !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.test(text)) return false;
  return true;
}

function minimalNumber(schema: JsonSchema): number {
  const lowest = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1);
  return Math.min(Math.max(lowest, 1), schema.maximum ?? Infinity);
}

/** The smallest value the schema accepts: required fields only, empty lists, the first option. */
export function minimalValue(schema: JsonSchema): unknown {
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  const options = branches(schema);
  if (options) return minimalValue(options[0]);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object':
      return Object.fromEntries((schema.required ?? []).map((key) => [key, minimalValue(schema.properties?.[key] ?? {})]));
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => minimalValue(schema.items ?? {}));
    case 'string': {
      const text = STRING_CANDIDATES.find((candidate) => stringAccepted(schema, candidate));
      if (text === undefined) throw new Error(`no candidate string fits ${JSON.stringify(schema)}: add one to STRING_CANDIDATES`);
      return text;
    }
    case 'integer':
    case 'number':
      return minimalNumber(schema);
    case 'boolean':
      return false;
    case 'null':
      return null;
    default:
      return {};
  }
}

/** A key that a record's key pattern accepts. */
function recordKey(pattern: string): string {
  const key = ['k', 'K', 'k1', 'x-k'].find((candidate) => new RegExp(pattern, 'u').test(candidate));
  if (key === undefined) throw new Error(`no candidate key fits the pattern ${pattern}`);
  return key;
}

/**
 * Every field of a schema, depth first, the body itself first: object properties (optional ones
 * too), a record's values (under a key its pattern accepts), the first item of a list, and the
 * fields of an object inside an anyOf.
 */
export function fieldSites(schema: JsonSchema, path: (string | number)[] = []): FieldSite[] {
  const sites: FieldSite[] = [{ path, schema }];
  for (const [key, child] of Object.entries(schema.properties ?? {})) sites.push(...fieldSites(child, [...path, key]));
  for (const [pattern, child] of Object.entries(schema.patternProperties ?? {})) sites.push(...fieldSites(child, [...path, recordKey(pattern)]));
  if (schema.items) sites.push(...fieldSites(schema.items, [...path, 0]));
  for (const option of branches(schema) ?? []) {
    // A branch's own fields; the branch itself is not a field of its own.
    if (option.properties || option.patternProperties || option.items) sites.push(...fieldSites(option, path).slice(1));
  }
  return sites;
}

/** The schema at `path` inside `schema`, following the same steps as fieldSites. */
function childSchema(schema: JsonSchema, step: string | number): JsonSchema {
  if (typeof step === 'number') return schema.items ?? {};
  const own = schema.properties?.[step] ?? Object.entries(schema.patternProperties ?? {}).find(([pattern]) => new RegExp(pattern, 'u').test(step))?.[1];
  if (own) return own;
  const option = (branches(schema) ?? []).find((branch) => branch.properties?.[step] || branch.patternProperties);
  return option ? childSchema(option, step) : {};
}

/**
 * The root's minimal value with `value` at `path`; the containers on the way are created from
 * their own schemas (an optional object, a list with one item), so that only the leaf is wrong.
 */
export function bodyWith(root: JsonSchema, path: (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value;
  const [step, ...rest] = path;
  const container = minimalValue(root) as Record<string | number, unknown>;
  const child = childSchema(root, step);
  if (typeof step === 'number') {
    const list = (Array.isArray(container) ? [...container] : []) as unknown[];
    list[step] = bodyWith(child, rest, value);
    return list;
  }
  return { ...container, [step]: bodyWith(child, rest, value) };
}

/**
 * A value of `kind` for a field of `schema`, chosen to be one that type coercion would turn into
 * something the field accepts (`"64"` for a number, `7` for a string, `[valid]` for a scalar), so
 * that a platform that coerces is caught accepting it.
 */
export function wrongValue(schema: JsonSchema, kind: JsonKind): unknown {
  const valid = minimalValue(schema);
  switch (kind) {
    case 'string': {
      if (typeof valid === 'number' || typeof valid === 'boolean') return String(valid);
      if (Array.isArray(valid) && schema.items) {
        const item = minimalValue(schema.items);
        return typeof item === 'string' ? item : 'text';
      }
      return 'text';
    }
    case 'integer':
      return 7;
    case 'fraction':
      return 1.5;
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'object':
      return {};
    case 'array':
      return [valid];
  }
}

/** How the API names a field in its messages: `body.spec.runtime.envs.0.name`. */
export function fieldName(path: (string | number)[]): string {
  return ['body', ...path].join('.');
}

/** For each field of the body schema, for each JSON kind it does not accept, one mutated body. */
export function wrongTypeMutations(body: JsonSchema): Mutation[] {
  const mutations: Mutation[] = [];
  for (const site of fieldSites(body)) {
    const accepted = acceptedKinds(site.schema);
    if (!accepted) continue;
    for (const kind of ALL_KINDS) {
      if (accepted.has(kind)) continue;
      mutations.push({ field: fieldName(site.path), kind, body: bodyWith(body, site.path, wrongValue(site.schema, kind)) });
    }
  }
  return mutations;
}
