import { AjvCompiler, type BuildCompilerFromPool, type Options } from '@fastify/ajv-compiler';
import type { FastifySchemaCompiler } from 'fastify';

/**
 * Options every part of a request is validated with: unknown fields are kept so that a schema
 * can refuse them by name, and validation stops at the first error (all errors of a hostile
 * body can cost far more than the body itself).
 */
const SHARED_OPTIONS = { removeAdditional: false, allErrors: false } as const;

/**
 * Request bodies are JSON, whose values carry their own types: a value of the wrong type is the
 * client's mistake, answered 400 naming the field, never converted (`"1024"` is no memory size,
 * `"node agent.js"` is no command line, `null` is no empty string).
 */
const BODY_OPTIONS = { ...SHARED_OPTIONS, coerceTypes: false } as const;

/**
 * Query strings, path parameters and headers are text by nature: there `"10"` is read as the
 * number and `"true"` as the boolean the route's schema asks for, and one value as a list of one.
 */
const TEXT_OPTIONS = { ...SHARED_OPTIONS, coerceTypes: 'array' } as const;

/**
 * Fastify's own Ajv compiler, in two configurations chosen by the part of the request a schema
 * describes. Ajv sets type coercion per instance, so one instance cannot do both.
 */
export function exactBodyValidators(): BuildCompilerFromPool {
  const fromPool = AjvCompiler();
  return (externalSchemas, options) => {
    const compilerWith = (customOptions: Options) =>
      fromPool(externalSchemas, { plugins: options?.plugins, onCreate: options?.onCreate, customOptions }) as unknown as FastifySchemaCompiler<unknown>;
    const body = compilerWith(BODY_OPTIONS);
    const text = compilerWith(TEXT_OPTIONS);
    const compile: FastifySchemaCompiler<unknown> = (route) => (route.httpPart === 'body' ? body : text)(route);
    // Fastify calls the compiler with the route's definition, whatever the pool's type says.
    return compile as unknown as ReturnType<BuildCompilerFromPool>;
  };
}
