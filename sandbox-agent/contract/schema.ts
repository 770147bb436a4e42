/**
 * JSON Schemas (the OpenAPI 3.0 dialect) written beside the contract's TypeScript types and
 * checked against them by the compiler: `SchemaOf<T>` only accepts a schema that names every
 * field of T, with the JSON type of each, so a field added to a type without its schema (or the
 * other way round) does not compile. Plain objects, no library: the agent loads this module.
 */

/** Words a schema may carry whatever it describes. */
type Described = { description?: string };

/** A schema given by reference to a named one (`#/components/schemas/<name>`). */
export type SchemaRef = { $ref: string };

type StringSchema<T extends string> = Described & { type: 'string'; enum?: readonly T[]; format?: string; pattern?: string };
type NumberSchema = Described & { type: 'integer' | 'number'; minimum?: number; maximum?: number };
type BooleanSchema = Described & { type: 'boolean' };
type ArraySchema<E> = Described & { type: 'array'; items: SchemaOf<E> };
type MapSchema<V> = Described & { type: 'object'; additionalProperties: SchemaOf<V> };

/** Keys of T that a value must have. */
type RequiredKey<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];

/**
 * Every field of T with its schema; an optional field says so with `optional: true` (dropped
 * from the document, where it becomes the field's absence from `required`).
 */
type Properties<T> = { [K in keyof T]-?: SchemaOf<Exclude<T[K], undefined>> & (K extends RequiredKey<T> ? { optional?: never } : { optional: true }) };

export type ObjectSchema<T> = Described & { type: 'object'; properties: Properties<T> };

type SchemaOfValue<T> = [T] extends [string]
  ? StringSchema<T>
  : [T] extends [number]
    ? NumberSchema
    : [T] extends [boolean]
      ? BooleanSchema
      : [T] extends [readonly (infer E)[]]
        ? ArraySchema<E>
        : string extends keyof T
          ? MapSchema<T[string]>
          : ObjectSchema<T> | SchemaRef;

/** The schema of a value of type T; `null` in T asks for `nullable: true`. */
export type SchemaOf<T> = null extends T ? SchemaOfValue<Exclude<T, null>> & { nullable: true } : SchemaOfValue<T>;

/** Any schema of the contract, as the document generator walks it. */
export type AnySchema = {
  type?: string;
  properties?: Record<string, AnySchema & { optional?: boolean }>;
  items?: AnySchema;
  additionalProperties?: AnySchema;
  [keyword: string]: unknown;
};

/** The schema of an object type T, checked by the compiler and kept as the plain object it is. */
export function schemaOf<T>(schema: ObjectSchema<T>): ObjectSchema<T> {
  return schema;
}
