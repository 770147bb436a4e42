import { WORKLOAD_KIND_TRAITS } from '../../../../domain/workloads/kinds';
import { WORKLOAD_KINDS } from '../../../../domain/workloads/workload';

// What the management API and the provisioning saga both read of a workload kind.

const config = { runUrl: 'https://run.example', baseUrl: 'https://api.example' };

test('every workload kind has its traits, under its own path', () => {
  for (const kind of WORKLOAD_KINDS) {
    expect(WORKLOAD_KIND_TRAITS[kind].path).toBe(kind);
    expect(WORKLOAD_KIND_TRAITS[kind].initialStatus).toBe('UPLOADING');
  }
});

test('endpoints: workloads on the run host (a function at its MCP path), jobs on the API host', () => {
  expect(WORKLOAD_KIND_TRAITS.agents.url(config, 'ws', 'echo')).toBe('https://run.example/ws/agents/echo');
  expect(WORKLOAD_KIND_TRAITS.functions.url(config, 'ws', 'mail')).toBe('https://run.example/ws/functions/mail/mcp');
  expect(WORKLOAD_KIND_TRAITS.models.url(config, 'ws', 'gpt')).toBe('https://run.example/ws/models/gpt');
  expect(WORKLOAD_KIND_TRAITS.jobs.url(config, 'ws', 'nightly')).toBe('https://api.example/ws/jobs/nightly');
});

test('a workload that needs no bundle says what it deploys instead of waiting for one', () => {
  expect(WORKLOAD_KIND_TRAITS.functions.initialMessage({ integrationConnections: ['gmail-acme'] })).toBe("created; deploying the integration's MCP server");
  expect(WORKLOAD_KIND_TRAITS.functions.initialMessage({})).toBe('created; waiting for a code bundle to deploy');
  expect(WORKLOAD_KIND_TRAITS.models.initialMessage({ runtime: { type: 'openai', endpoint: 'https://api.openai.com/v1' } })).toBe('created; deploying the provider model');
  expect(WORKLOAD_KIND_TRAITS.agents.initialMessage({})).toBe('created; waiting for a code bundle to deploy');
});
