import type { Client } from '@temporalio/client';
import type { HangarConfig } from '../core/config';

/**
 * Long-lived workflows the platform keeps exactly one of (per deployment). Starting them is
 * idempotent: their ids are fixed, so every worker start may ask and only the first one starts.
 */
export async function startSingletonWorkflows(_client: Client, _config: HangarConfig): Promise<void> {}
