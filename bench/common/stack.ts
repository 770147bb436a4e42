import type { HangarConfig } from '../../domain/config';
import type { Stack } from '../../scripts/stack';

/** `config` pointed at the services of `stack`, for the processes a benchmark starts on them. */
export function configOnStack(config: HangarConfig, stack: Stack): HangarConfig {
  return {
    ...config,
    databaseUrl: stack.databaseUrl,
    clickhouseUrl: stack.clickhouseUrl,
    clickhouseDatabase: stack.clickhouseDatabase,
    temporalAddress: stack.temporalAddress,
  };
}
