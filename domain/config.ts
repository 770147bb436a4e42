import os from 'node:os';
import path from 'node:path';
import { parseAllowedPrivateRanges } from './sandbox/ip-address';
import { parseNetworkSpec } from './sandbox/network-defaults';
import type { SandboxNetworkSpec } from './sandbox/network-policy';
import { parseNodeLabels, UNREACHABLE_AFTER_SECONDS } from './nodes/node';
import { isUnspecifiedHost, nodeListenerUrl, parseNodeListen, type NodeListenAddress } from './nodes/listener-address';

/**
 * Every setting Hangar reads from its environment, in one place. Defaults give a working
 * single-machine install; each external service can be replaced by pointing its URL elsewhere.
 */
export interface HangarConfig {
  /** Folder holding local service data, generated keys and credentials. */
  dataDir: string;
  /** Address the API listeners bind to. */
  host: string;
  basePort: number;
  runPort: number;
  sandboxPort: number;
  /** Public addresses handed to clients. */
  baseUrl: string;
  runUrl: string;
  /** Template for one sandbox's address; {sandbox_id}, {workspace_id} and {region} default to 'unknown'. */
  sandboxUrlTemplate: string;
  /** Template for a preview's address; {preview_id} names the preview. Unset: `/_previews/{preview_id}` on the sandbox URLs' origin. */
  previewUrlTemplate?: string;
  region: string;
  /** Local service ports, used only when the matching URL is not given. */
  postgresPort: number;
  clickhouseHttpPort: number;
  clickhouseTcpPort: number;
  temporalPort: number;
  temporalUiPort: number;
  /** The Temporal Web UI the console links workflows to (HANGAR_TEMPORAL_UI_URL; npm start sets it to the UI it runs). */
  temporalUiUrl?: string;
  /** External services: when set, nothing is started locally for them. */
  databaseUrl?: string;
  clickhouseUrl?: string;
  temporalAddress?: string;
  temporalNamespace: string;
  clickhouseDatabase: string;
  /**
   * A cluster of the ClickHouse servers' own configuration (remote_servers): the usage schema is
   * created ON CLUSTER, sharded over it. Unset: one server.
   */
  clickhouseCluster?: string;
  /** 32-byte key (base64) sealing secrets at rest; generated into the data folder when absent. */
  masterKey?: string;
  /** Task queue of the control-plane worker. */
  taskQueue: string;
  /** This machine's identity; its runtime worker polls the task queue `<taskQueue>-node-<nodeId>`. */
  nodeId: string;
  /** This node's labels (HANGAR_NODE_LABELS=key=value,...), reported with its capacity; the region is one more. */
  nodeLabels: Record<string, string>;
  /**
   * Where this node's listener serves its sandboxes and workloads to other hosts' gateways
   * (HANGAR_NODE_LISTEN=ip:port); unset, the node is reached only by the gateways of its own host.
   */
  nodeListen?: NodeListenAddress;
  /** The URL the listener is advertised at (HANGAR_NODE_LISTENER_URL; by default from HANGAR_NODE_LISTEN). */
  nodeListenerUrl?: string;
  /** Seconds of silence after which a node is LOST rather than UNREACHABLE (HANGAR_NODE_LOST_SECONDS, more than 10). */
  nodeLostSeconds: number;
  /** Seconds without requests or foreground commands before a sandbox goes to standby. */
  sandboxIdleSeconds: number;
  /** Sandboxes kept started ahead of demand on each node, so creating one takes a started one. */
  sandboxWarmPool: number;
  /** The cgroup folder this node's sandboxes go under (HANGAR_SANDBOX_CGROUP, `hangar`); node workers sharing a machine need one each. */
  sandboxCgroupName: string;
  /**
   * Whether this platform's nodes give sandboxes outbound network by their `spec.network` (on
   * unless HANGAR_SANDBOX_NETWORK=off): without it every sandbox has loopback only.
   */
  sandboxNetwork: boolean;
  /** The private subnet of each node's sandboxes (HANGAR_SANDBOX_SUBNET). */
  sandboxSubnet: string;
  /**
   * The platform-wide `spec.network` of new sandboxes that give none and whose workspace has no
   * default (HANGAR_SANDBOX_DEFAULT_NETWORK, JSON in spec.network's shape).
   */
  sandboxDefaultNetwork?: SandboxNetworkSpec;
  /** Blocks of private ranges sandboxes may reach (HANGAR_SANDBOX_ALLOWED_PRIVATE_RANGES, comma-separated CIDR blocks). */
  sandboxAllowedPrivateRanges: string[];
  /** Seconds without gateway requests before a workload with `minScale: 0` stops (scales to zero). */
  workloadIdleSeconds: number;
  /** Longest a gateway request holds while its workload starts again from zero, in seconds. */
  workloadWakeTimeoutSeconds: number;
  /** Longest a sandbox gateway request holds while its sandbox is still starting (DEPLOYING), in seconds. */
  sandboxStartWaitSeconds: number;
  /** Lifetime of issued access tokens, in seconds. */
  tokenTtlSeconds: number;
  /** How long callbacks (async agent results, detected ports) are retried before being given up. */
  callbackGiveUpSeconds: number;
  /** Largest accepted request body, in bytes. */
  bodyLimitBytes: number;
  logLevel: string;
  /**
   * Processes serving the management API (base_url), sharing its port: it keeps no state between
   * requests, so this is how it uses more than one core. Default: the machine's cores, at most 4.
   */
  apiProcesses: number;
  /** Third-party providers the integration catalog talks to; tests point them at a fake provider. */
  integrations: { email: OAuthProviderEndpoints };
}

/** Where an OAuth-based integration's provider lives. */
export interface OAuthProviderEndpoints {
  /** The page users are sent to for consent (step 2 of the tenant flow). */
  authorizationUrl: string;
  /** Exchanges authorization codes and refresh tokens for access tokens. */
  tokenUrl: string;
  /** Base of the provider's API the integration calls with access tokens. */
  apiBase: string;
  /** OpenID Connect userinfo endpoint: who the connected account is. */
  userinfoUrl: string;
}

/** The task queue of one node's runtime worker. */
export function nodeTaskQueue(config: Pick<HangarConfig, 'nodeId' | 'taskQueue'>): string {
  return `${config.taskQueue}-node-${config.nodeId}`;
}

function intFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got '${raw}'`);
  return value;
}

/** An on/off setting: on, true, 1 or off, false, 0 (any case); anything else is a mistake to name, not a default. */
function switchFrom(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = (env[name] ?? '').trim().toLowerCase();
  if (raw === '') return fallback;
  if (['on', 'true', '1'].includes(raw)) return true;
  if (['off', 'false', '0'].includes(raw)) return false;
  throw new Error(`${name} must be on or off, got '${env[name]}'`);
}

function labelsFrom(env: NodeJS.ProcessEnv, name: string): Record<string, string> {
  try {
    return parseNodeLabels(env[name] ?? '');
  } catch (err) {
    throw new Error(`${name}: ${(err as Error).message}`, { cause: err });
  }
}

function lostAfterFrom(env: NodeJS.ProcessEnv, name: string): number {
  const value = intFrom(env, name, 60);
  if (value <= UNREACHABLE_AFTER_SECONDS) throw new Error(`${name} must be more than ${UNREACHABLE_AFTER_SECONDS} (a node is UNREACHABLE first), got '${env[name]}'`);
  return value;
}

function nodeListenFrom(env: NodeJS.ProcessEnv): Pick<HangarConfig, 'nodeListen' | 'nodeListenerUrl'> {
  if (!env.HANGAR_NODE_LISTEN) {
    if (env.HANGAR_NODE_LISTENER_URL) throw new Error('HANGAR_NODE_LISTENER_URL is set without HANGAR_NODE_LISTEN');
    return {};
  }
  const listen = parseNodeListen(env.HANGAR_NODE_LISTEN);
  if ('problem' in listen) throw new Error(`HANGAR_NODE_LISTEN ${listen.problem}`);
  const advertised = env.HANGAR_NODE_LISTENER_URL;
  if (!advertised && isUnspecifiedHost(listen.host)) throw new Error('HANGAR_NODE_LISTEN binds every address: set HANGAR_NODE_LISTENER_URL to the address other hosts reach it at');
  if (advertised && !/^http:\/\/[^/]+:\d+\/?$/.test(advertised)) throw new Error(`HANGAR_NODE_LISTENER_URL must be http://<host>:<port>, got '${advertised}'`);
  return { nodeListen: listen, nodeListenerUrl: advertised?.replace(/\/$/, '') ?? nodeListenerUrl(listen) };
}

/** A cluster name is spliced into DDL (ON CLUSTER, Distributed(...)): a plain identifier only. */
function clusterFrom(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name] ?? '';
  if (raw === '') return undefined;
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(raw)) throw new Error(`${name} must name a cluster with letters, digits and '_' only, got '${raw}'`);
  return raw;
}

function atLeastOne(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = intFrom(env, name, fallback);
  if (value < 1) throw new Error(`${name} must be at least 1, got '${env[name]}'`);
  return value;
}

/** HANGAR_SANDBOX_DEFAULT_NETWORK: a `spec.network` as JSON, checked entry by entry like a sandbox's. */
function defaultNetworkFrom(env: NodeJS.ProcessEnv): SandboxNetworkSpec | undefined {
  const name = 'HANGAR_SANDBOX_DEFAULT_NETWORK';
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    throw new Error(`${name} must be JSON in spec.network's shape, e.g. {"allowedDomains":["pypi.org"]}: ${(err as Error).message}`, { cause: err });
  }
  const spec = parseNetworkSpec(value, name);
  if ('problem' in spec) throw new Error(spec.problem);
  return spec;
}

/** HANGAR_SANDBOX_ALLOWED_PRIVATE_RANGES: CIDR blocks inside private ranges, kept as written once checked. */
function allowedPrivateRangesFrom(env: NodeJS.ProcessEnv): string[] {
  const name = 'HANGAR_SANDBOX_ALLOWED_PRIVATE_RANGES';
  const raw = env[name] ?? '';
  const blocks = parseAllowedPrivateRanges(raw, name);
  if ('problem' in blocks) throw new Error(blocks.problem);
  return raw.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): HangarConfig {
  const host = env.HANGAR_HOST || '127.0.0.1';
  const basePort = intFrom(env, 'HANGAR_BASE_PORT', 8080);
  const runPort = intFrom(env, 'HANGAR_RUN_PORT', 8081);
  const sandboxPort = intFrom(env, 'HANGAR_SANDBOX_PORT', 8082);
  return {
    dataDir: path.resolve(env.HANGAR_DATA_DIR || '.data'),
    host,
    basePort,
    runPort,
    sandboxPort,
    baseUrl: env.HANGAR_BASE_URL || `http://${host}:${basePort}`,
    runUrl: env.HANGAR_RUN_URL || `http://${host}:${runPort}`,
    sandboxUrlTemplate:
      env.HANGAR_SANDBOX_URL_TEMPLATE || `http://${host}:${sandboxPort}/{workspace_id}/{sandbox_id}`,
    previewUrlTemplate: env.HANGAR_PREVIEW_URL_TEMPLATE || undefined,
    region: env.HANGAR_REGION || 'local',
    postgresPort: intFrom(env, 'HANGAR_POSTGRES_PORT', 55432),
    clickhouseHttpPort: intFrom(env, 'HANGAR_CLICKHOUSE_HTTP_PORT', 18123),
    clickhouseTcpPort: intFrom(env, 'HANGAR_CLICKHOUSE_TCP_PORT', 19000),
    temporalPort: intFrom(env, 'HANGAR_TEMPORAL_PORT', 7233),
    temporalUiPort: intFrom(env, 'HANGAR_TEMPORAL_UI_PORT', 8233),
    temporalUiUrl: env.HANGAR_TEMPORAL_UI_URL || undefined,
    databaseUrl: env.DATABASE_URL || undefined,
    clickhouseUrl: env.CLICKHOUSE_URL || undefined,
    temporalAddress: env.TEMPORAL_ADDRESS || undefined,
    temporalNamespace: env.TEMPORAL_NAMESPACE || 'default',
    clickhouseDatabase: env.CLICKHOUSE_DATABASE || 'hangar',
    clickhouseCluster: clusterFrom(env, 'CLICKHOUSE_CLUSTER'),
    masterKey: env.HANGAR_MASTER_KEY || undefined,
    taskQueue: env.HANGAR_TASK_QUEUE || 'hangar-control',
    nodeId: env.HANGAR_NODE_ID || 'local',
    nodeLabels: labelsFrom(env, 'HANGAR_NODE_LABELS'),
    nodeLostSeconds: lostAfterFrom(env, 'HANGAR_NODE_LOST_SECONDS'),
    ...nodeListenFrom(env),
    sandboxIdleSeconds: intFrom(env, 'HANGAR_SANDBOX_IDLE_SECONDS', 15),
    sandboxWarmPool: intFrom(env, 'HANGAR_SANDBOX_WARM_POOL', 2),
    sandboxCgroupName: cgroupNameFrom(env),
    sandboxNetwork: switchFrom(env, 'HANGAR_SANDBOX_NETWORK', true),
    sandboxSubnet: env.HANGAR_SANDBOX_SUBNET || '10.200.0.0/16',
    sandboxDefaultNetwork: defaultNetworkFrom(env),
    sandboxAllowedPrivateRanges: allowedPrivateRangesFrom(env),
    workloadIdleSeconds: intFrom(env, 'HANGAR_WORKLOAD_IDLE_SECONDS', 300),
    workloadWakeTimeoutSeconds: intFrom(env, 'HANGAR_WORKLOAD_WAKE_TIMEOUT_SECONDS', 30),
    sandboxStartWaitSeconds: intFrom(env, 'HANGAR_SANDBOX_START_WAIT_SECONDS', 60),
    tokenTtlSeconds: intFrom(env, 'HANGAR_TOKEN_TTL_SECONDS', 3600),
    callbackGiveUpSeconds: intFrom(env, 'HANGAR_CALLBACK_GIVE_UP_SECONDS', 3600),
    bodyLimitBytes: intFrom(env, 'HANGAR_BODY_LIMIT_BYTES', 10 * 1024 * 1024),
    logLevel: env.HANGAR_LOG_LEVEL || 'info',
    apiProcesses: atLeastOne(env, 'HANGAR_API_PROCESSES', Math.min(os.availableParallelism(), 4)),
    integrations: {
      // Defaults: Google's OAuth 2.0 endpoints and the Gmail API.
      email: {
        authorizationUrl: env.HANGAR_OAUTH_EMAIL_AUTH_URL || 'https://accounts.google.com/o/oauth2/v2/auth',
        tokenUrl: env.HANGAR_OAUTH_EMAIL_TOKEN_URL || 'https://oauth2.googleapis.com/token',
        apiBase: env.HANGAR_OAUTH_EMAIL_API_BASE || 'https://gmail.googleapis.com',
        userinfoUrl: env.HANGAR_OAUTH_EMAIL_USERINFO_URL || 'https://openidconnect.googleapis.com/v1/userinfo',
      },
    },
  };
}

/** Where Temporal's frontend listens: TEMPORAL_ADDRESS, or the local dev server's port. */
export function temporalAddress(config: HangarConfig): string {
  return config.temporalAddress ?? `127.0.0.1:${config.temporalPort}`;
}

/** HANGAR_SANDBOX_CGROUP: one folder name (letters, digits, `.`, `_`, `-`), never a path. */
function cgroupNameFrom(env: NodeJS.ProcessEnv): string {
  const name = env.HANGAR_SANDBOX_CGROUP || 'hangar';
  if (!/^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$/.test(name)) throw new Error(`HANGAR_SANDBOX_CGROUP must be one folder name (letters, digits, '.', '_', '-'), not '${name}'`);
  return name;
}
