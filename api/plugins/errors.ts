import type { FastifyError, FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { isBackendUnavailable } from '../backend-unavailable';
import { ApiError } from '../../domain/errors';

interface ValidationIssue {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** `body.metadata.name`, from a validation context and an instance path like `/metadata/name`. */
function fieldPath(context: string | undefined, instancePath: string, extra?: unknown): string {
  const parts = [context ?? 'body', ...instancePath.split('/').filter(Boolean)];
  if (typeof extra === 'string') parts.push(extra);
  return parts.join('.');
}

export function describeValidation(issue: ValidationIssue, context: string | undefined): string {
  const { keyword, params } = issue;
  if (keyword === 'required') return `${fieldPath(context, issue.instancePath, params.missingProperty)} is required`;
  if (keyword === 'additionalProperties') {
    return `${fieldPath(context, issue.instancePath, params.additionalProperty)} is not a known field`;
  }
  return `${fieldPath(context, issue.instancePath)} ${issue.message ?? 'is invalid'}`;
}

/** Fastify's own client errors, mapped to stable codes. */
const FRAMEWORK_ERRORS: Record<string, { status: number; code: string; message?: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'invalid_json', message: 'the request body is not valid JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'invalid_json', message: 'the request body is empty but Content-Type is application/json' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'payload_too_large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: 'unsupported_media_type' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'bad_request' },
};

/**
 * Every error leaves as JSON `{error, message}`; a client never sees a stack trace. A backing
 * service out of reach is a 503 with Retry-After; other unexpected errors are logged with their
 * stack and answered with a generic 500.
 */
export default fp(async function errorHandling(app: FastifyInstance) {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof ApiError) {
      return reply.status(err.statusCode).send({ error: err.code, message: err.message, ...err.details });
    }
    if (err.validation) {
      const issue = err.validation[0] as ValidationIssue;
      return reply.status(400).send({ error: 'bad_request', message: describeValidation(issue, err.validationContext) });
    }
    const known = err.code ? FRAMEWORK_ERRORS[err.code] : undefined;
    if (known) return reply.status(known.status).send({ error: known.code, message: known.message ?? err.message });
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.status(err.statusCode).send({ error: 'bad_request', message: err.message });
    }
    if (isBackendUnavailable(err)) {
      // Expected while a local service restarts: one line, no stack, and an answer worth retrying.
      request.log.warn({ code: (err as { code?: unknown }).code, message: err.message }, 'a backing service is unavailable');
      return reply.status(503).header('retry-after', '1').send({ error: 'unavailable', message: 'a service the platform depends on is unavailable; retry shortly' });
    }
    request.log.error({ err }, 'unhandled error');
    return reply.status(500).send({ error: 'internal', message: 'internal server error' });
  });

  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send({ error: 'not_found', message: `no route for ${request.method} ${request.url.split('?')[0]}` });
  });
});
