import { ApplicationFailure } from '@temporalio/activity';
import type { Pool } from 'pg';
import type { HangarConfig } from '../../domain/config';
import { REGISTRY_INTEGRATION } from '../../domain/integrations/catalog';
import { registryAccountFor, type RegistryAccount } from '../../domain/integrations/registry-credentials';
import { SecretBox } from '../../domain/secret-box';
import { ConnectionStore } from '../../store/connections';
import { loadMasterKey } from '../../store/master-key';

/** The account a sandbox's pull uses: the connection it names, opened for the image's registry. */
export type RegistryAccounts = (workspaceId: string, connection: string, image: string) => Promise<RegistryAccount>;

/**
 * Opens `oci-registry` connections on the node (which reads PostgreSQL and holds the master key),
 * so a registry's password goes from the database to the pull's own credentials file and nowhere
 * else. A connection that is gone, of another integration or for another registry fails the pull
 * at once (retrying changes nothing), naming the connection and never its secrets.
 */
export function registryAccountsFrom(pg: Pool, config: HangarConfig): RegistryAccounts {
  let store: ConnectionStore | undefined;
  return async (workspaceId, connection, image) => {
    store ??= new ConnectionStore(pg, new SecretBox(loadMasterKey(config)));
    const row = await store.get(workspaceId, connection);
    if (!row) throw ApplicationFailure.nonRetryable(`integration connection '${connection}' (spec.runtime.registryConnection) no longer exists`, 'RegistryCredentialsError');
    if (row.integration !== REGISTRY_INTEGRATION) {
      throw ApplicationFailure.nonRetryable(`integration connection '${connection}' is of integration '${row.integration}', not '${REGISTRY_INTEGRATION}'`, 'RegistryCredentialsError');
    }
    const account = registryAccountFor(connection, await store.openSecrets(row), image);
    if ('problem' in account) throw ApplicationFailure.nonRetryable(account.problem, 'RegistryCredentialsError');
    return account;
  };
}
