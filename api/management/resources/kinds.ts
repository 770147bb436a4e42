import type { Pool } from 'pg';
import { Type, type TSchema } from 'typebox';
import { MAX_CONCURRENT_TASKS, MAX_TASK_RETRIES, MAX_TASK_TIMEOUT_SECONDS } from '../../../domain/jobs/execution';
import { WORKLOAD_KIND_TRAITS, type WorkloadKindTraits } from '../../../domain/workloads/kinds';
import { MAX_READINESS_SECONDS } from '../../../domain/workloads/workload';
import { ResourceName } from '../common-schemas';
import { NetworkSpecSchema } from '../network-schema';
import { validateFunctionSpec, validateModelSpec } from '../../../control-plane/connection-bindings';

/**
 * A workload kind as the API serves it: its traits (domain/workloads/kinds.ts, shared with the
 * provisioning saga), the shape of its spec, and its checks beyond the schema.
 */
export interface ResourceKind extends WorkloadKindTraits {
  spec: TSchema;
  /**
   * Checks a spec beyond its schema before create and update (references to other resources,
   * rules across fields); throws an ApiError. Takes services, not the Fastify app, so that
   * workflows' activities validate exactly as the API does.
   */
  validate?(ctx: { pg: Pool }, workspace: { id: string; name: string }, spec: Record<string, unknown>): Promise<void>;
}

const EnvVar = Type.Object(
  { name: Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 255 }), value: Type.String({ maxLength: 32_768 }), secret: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);

export const WorkloadRuntime = Type.Object(
  {
    type: Type.Optional(Type.String({ maxLength: 63 })),
    image: Type.Optional(Type.String({ maxLength: 255 })),
    memory: Type.Optional(Type.Integer({ minimum: 64, maximum: 65_536, description: 'Memory limit in MB.' })),
    envs: Type.Optional(Type.Array(EnvVar, { maxItems: 200 })),
    command: Type.Optional(Type.Array(Type.String({ maxLength: 4_096 }), { maxItems: 100 })),
    minScale: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
    maxScale: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
    readinessTimeoutSeconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_READINESS_SECONDS, description: 'How long a new revision may take to listen on its port (default 30).' }),
    ),
  },
  { additionalProperties: true },
);

/** Every kind's instances (a job's executions) run in a sandbox of their own, with this outbound network. */
const network = Type.Optional(NetworkSpecSchema);

const WorkloadSpec = Type.Object({ runtime: Type.Optional(WorkloadRuntime), network }, { additionalProperties: true });

// A job's own settings, declared so that a value of the wrong type is refused rather than
// quietly replaced by the default.
const JobSpec = Type.Object(
  {
    runtime: Type.Optional(
      Type.Object(
        {
          ...WorkloadRuntime.properties,
          maxConcurrentTasks: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_CONCURRENT_TASKS, description: 'Tasks running at once (default 10).' })),
          maxRetries: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_TASK_RETRIES, description: 'Retries of a failed task (default 0).' })),
          timeout: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TASK_TIMEOUT_SECONDS, description: 'Seconds one task may run (default 3600).' })),
        },
        { additionalProperties: true },
      ),
    ),
    network,
  },
  { additionalProperties: true },
);

const FunctionSpec = Type.Object(
  {
    type: Type.Optional(Type.String({ maxLength: 63, description: "'mcp' for an MCP server." })),
    integrationConnections: Type.Optional(Type.Array(ResourceName, { maxItems: 50 })),
    runtime: Type.Optional(WorkloadRuntime),
    network,
  },
  { additionalProperties: true },
);

const ModelSpec = Type.Object(
  {
    integrationConnections: Type.Optional(
      Type.Array(ResourceName, { maxItems: 1, description: "A provider model's connection of integration 'openai', holding its API_KEY." }),
    ),
    runtime: Type.Optional(
      Type.Object(
        {
          ...WorkloadRuntime.properties,
          type: Type.Optional(Type.String({ maxLength: 63, description: "'openai' for a provider model (an OpenAI-compatible API); absent for a model deployed from a code bundle." })),
          endpoint: Type.Optional(Type.String({ maxLength: 2_048, description: "A provider model's upstream base URL (http or https), e.g. 'https://api.openai.com/v1'." })),
          model: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: "The provider's name of the model, sent upstream as 'model'; the model's own name by default." })),
        },
        { additionalProperties: true },
      ),
    ),
    network,
  },
  { additionalProperties: true },
);

export const RESOURCE_KINDS: ResourceKind[] = [
  { ...WORKLOAD_KIND_TRAITS.agents, spec: WorkloadSpec },
  { ...WORKLOAD_KIND_TRAITS.models, spec: ModelSpec, validate: validateModelSpec },
  { ...WORKLOAD_KIND_TRAITS.functions, spec: FunctionSpec, validate: validateFunctionSpec },
  { ...WORKLOAD_KIND_TRAITS.jobs, spec: JobSpec },
];
