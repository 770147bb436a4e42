import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { temporalBinary } from './binaries';
import { runLocalService, type LaunchContext, type StartedService } from './local-service';
import { waitUntilReady } from './readiness';

/** Keyword search attributes every Hangar workflow may carry (workspace, kind and name of its resource). */
export const SEARCH_ATTRIBUTES = ['HangarWorkspace', 'HangarResourceKind', 'HangarResourceName'] as const;

const CALL_DEADLINE_MS = 5_000;
const GRPC_ALREADY_EXISTS = 6;

async function withConnection<T>(address: string, use: (connection: Connection) => Promise<T>): Promise<T> {
  const connection = await Connection.connect({ address, connectTimeout: CALL_DEADLINE_MS });
  try {
    return await connection.withDeadline(Date.now() + CALL_DEADLINE_MS, () => use(connection));
  } finally {
    await connection.close();
  }
}

/** The namespace exists; returns the names of its custom search attributes. */
export async function namespaceSearchAttributes(address: string, namespace: string): Promise<Set<string>> {
  return withConnection(address, async (connection) => {
    await connection.workflowService.describeNamespace({ namespace });
    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    return new Set(Object.keys(listed.customAttributes ?? {}));
  });
}

function missingAttributes(present: Set<string>): string[] {
  return SEARCH_ATTRIBUTES.filter((name) => !present.has(name));
}

export interface LocalTemporalOptions {
  dataDir: string;
  port: number;
  uiPort: number;
  namespace: string;
}

/** The Temporal dev server (SQLite in `<dataDir>/temporal`), with the Web UI and our search attributes. */
export async function startLocalTemporal(options: LocalTemporalOptions, ctx: LaunchContext): Promise<{ address: string; uiUrl: string; service: StartedService }> {
  const dir = path.join(options.dataDir, 'temporal');
  fs.mkdirSync(dir, { recursive: true });
  const dbFile = path.join(dir, 'temporal.db');
  const address = `127.0.0.1:${options.port}`;
  const argv = [
    temporalBinary(),
    'server',
    'start-dev',
    '--db-filename',
    dbFile,
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--ui-port',
    String(options.uiPort),
    '--log-level',
    'warn',
    ...SEARCH_ATTRIBUTES.flatMap((name) => ['--search-attribute', `${name}=Keyword`]),
    ...(options.namespace === 'default' ? [] : ['--namespace', options.namespace]),
  ];
  const service = await runLocalService(ctx, {
    spec: {
      name: 'temporal',
      argv,
      runAs: [],
      logFile: path.join(dir, 'temporal.log'),
      pidFile: path.join(dir, 'service.pid'),
      marker: dbFile,
      stopSignal: 'SIGTERM',
      cwd: dir,
    },
    ports: [
      { port: options.port, purpose: 'Temporal frontend (HANGAR_TEMPORAL_PORT)' },
      { port: options.uiPort, purpose: 'Temporal Web UI (HANGAR_TEMPORAL_UI_PORT)' },
    ],
    probe: async () => {
      const missing = missingAttributes(await namespaceSearchAttributes(address, options.namespace));
      if (missing.length) throw new Error(`search attributes not registered yet: ${missing.join(', ')}`);
    },
  });
  return { address, uiUrl: `http://127.0.0.1:${options.uiPort}`, service };
}

/**
 * An external Temporal (TEMPORAL_ADDRESS): nothing is started; once its namespace answers, our
 * search attributes are registered where missing.
 */
export async function prepareExternalTemporal(address: string, namespace: string, ctx: LaunchContext): Promise<void> {
  const present = await waitUntilReady(`Temporal at ${address} (namespace ${namespace})`, () => namespaceSearchAttributes(address, namespace), {
    timeoutMs: ctx.readyTimeoutMs,
    intervalMs: 500,
  });
  const missing = missingAttributes(present);
  if (!missing.length) return;
  ctx.log(`temporal: registering search attributes ${missing.join(', ')} in namespace ${namespace}`);
  const keyword = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
  await withConnection(address, async (connection) => {
    try {
      await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: Object.fromEntries(missing.map((name) => [name, keyword])) });
    } catch (err) {
      // Another start registered them meanwhile.
      if ((err as { code?: number }).code !== GRPC_ALREADY_EXISTS) throw err;
    }
  });
}
