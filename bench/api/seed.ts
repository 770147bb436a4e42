import type { HttpClient } from '../common/http';

export const BENCH_WORKSPACE = 'bench-api';
const MEMBER_NAME = 'bench-member';

export interface SeededTenant {
  workspace: string;
  agentNames: string[];
  /** A member of the workspace (not an account admin): the common caller. */
  clientId: string;
  clientSecret: string;
  apiKey: string;
}

export function agentName(index: number): string {
  return `bench-agent-${String(index).padStart(4, '0')}`;
}

/**
 * Seeds through the API as a client would: the workspace, a member service account with an API
 * key, and `agents` agents. Idempotent over runs on the same data folder: existing agents are
 * kept (409), and the member of an earlier run is deleted first, its secret being unknown now.
 */
export async function seedTenant(client: HttpClient, adminKey: string, agents: number, concurrency: number): Promise<SeededTenant> {
  const json = { 'content-type': 'application/json' };
  const asAdmin = { authorization: `Bearer ${adminKey}`, 'x-service-workspace': BENCH_WORKSPACE };

  const workspace = await client.request('POST', '/v0/workspaces', { ...asAdmin, ...json }, JSON.stringify({ name: BENCH_WORKSPACE }));
  if (workspace.status !== 200 && workspace.status !== 409) throw new Error(`creating the workspace answered ${workspace.status}: ${workspace.body}`);

  const members = JSON.parse((await client.expect(200, 'GET', '/v0/service_accounts', asAdmin)).body) as { clientId: string; name: string }[];
  for (const earlier of members.filter((m) => m.name === MEMBER_NAME)) {
    await client.expect(200, 'DELETE', `/v0/service_accounts/${encodeURIComponent(earlier.clientId)}`, asAdmin);
  }
  const created = await client.expect(200, 'POST', '/v0/service_accounts', { ...asAdmin, ...json }, JSON.stringify({ name: MEMBER_NAME, role: 'member' }));
  const { clientId, clientSecret } = JSON.parse(created.body) as { clientId: string; clientSecret: string };
  const key = await client.expect(200, 'POST', `/v0/service_accounts/${encodeURIComponent(clientId)}/api_keys`, { ...asAdmin, ...json }, JSON.stringify({ name: 'bench' }));
  const { apiKey } = JSON.parse(key.body) as { apiKey: string };

  const agentNames = Array.from({ length: agents }, (_, i) => agentName(i));
  const asMember = { authorization: `Bearer ${apiKey}`, 'x-service-workspace': BENCH_WORKSPACE, ...json };
  let next = 0;
  const creator = async () => {
    while (next < agentNames.length) {
      const name = agentNames[next++];
      const body = JSON.stringify({ metadata: { name, labels: { team: 'bench' } }, spec: { runtime: { type: 'python', memory: 512 } } });
      const response = await client.request('POST', '/v0/agents', asMember, body);
      if (response.status !== 200 && response.status !== 409) throw new Error(`creating agent ${name} answered ${response.status}: ${response.body}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, creator));
  return { workspace: BENCH_WORKSPACE, agentNames, clientId, clientSecret, apiKey };
}
