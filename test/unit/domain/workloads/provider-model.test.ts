import { isProviderModel, modelSpecProblem, providerTarget, upstreamChatBody } from '../../../../domain/workloads/provider-model';

const provider = (runtime: Record<string, unknown>, integrationConnections: unknown = ['llm']) => ({ runtime: { type: 'openai', ...runtime }, integrationConnections });

describe('modelSpecProblem', () => {
  test.each([
    [{}, undefined],
    [{ runtime: { command: ['node', 'main.js'] } }, undefined],
    [provider({ endpoint: 'https://api.openai.com/v1' }), undefined],
    [provider({ endpoint: 'http://[::1]:8000/v1', model: 'llama3' }), undefined],
    [{ runtime: { type: 'mcp' } }, "spec.runtime.type must be 'openai' (a provider model) or absent (a model deployed from a code bundle)"],
    [{ runtime: { endpoint: 'https://x/v1' } }, "spec.runtime.endpoint is only for provider models (spec.runtime.type 'openai')"],
    [{ integrationConnections: ['llm'] }, "spec.integrationConnections is only for provider models (spec.runtime.type 'openai')"],
    [provider({}), 'spec.runtime.endpoint is required for a provider model (the base URL of its OpenAI-compatible API)'],
    [provider({ endpoint: 42 }), 'spec.runtime.endpoint is required for a provider model (the base URL of its OpenAI-compatible API)'],
    [provider({ endpoint: '/v1' }), 'spec.runtime.endpoint must be an absolute http or https URL'],
    [provider({ endpoint: 'file:///etc/passwd' }), 'spec.runtime.endpoint must use http or https, not file'],
    [provider({ endpoint: 'https://me:sk-123@api.example.com/v1' }), 'spec.runtime.endpoint must not carry credentials: put the API key in the integration connection'],
    [provider({ endpoint: 'https://api.example.com/v1?key=sk-123' }), 'spec.runtime.endpoint must be a base URL without a query or fragment'],
    [provider({ endpoint: 'https://api.example.com/v1', model: '' }), 'spec.runtime.model must be a non-empty string'],
    [{ runtime: { type: 'openai', endpoint: 'https://api.example.com/v1' } }, "spec.integrationConnections must name exactly one connection of integration 'openai' (it holds the API key)"],
    [provider({ endpoint: 'https://api.example.com/v1' }, ['a', 'b']), "spec.integrationConnections must name exactly one connection of integration 'openai' (it holds the API key)"],
  ])('%j -> %s', (spec, problem) => {
    expect(modelSpecProblem(spec)).toBe(problem);
  });
});

test('the target drops trailing slashes and calls the model by its own name unless told otherwise', () => {
  expect(isProviderModel(provider({}))).toBe(true);
  expect(isProviderModel({ runtime: { type: 'mcp' } })).toBe(false);
  expect(providerTarget(provider({ endpoint: 'https://api.example.com/v1//' }), 'gpt')).toEqual({ endpoint: 'https://api.example.com/v1', model: 'gpt', connection: 'llm' });
  expect(providerTarget(provider({ endpoint: 'https://api.example.com/v1', model: 'gpt-4o' }), 'gpt').model).toBe('gpt-4o');
});

test("the upstream body is the client's object with the target's model, whatever model the client named", () => {
  const body = upstreamChatBody(Buffer.from('{"messages":[{"role":"user","content":"héllo"}],"model":"o1-pro","stream":true}'), 'gpt-4o');
  expect('body' in body && JSON.parse(body.body.toString('utf8'))).toEqual({ messages: [{ role: 'user', content: 'héllo' }], model: 'gpt-4o', stream: true });
  expect(upstreamChatBody(Buffer.from('messages=hi'), 'm')).toEqual({ problem: expect.stringMatching(/^body must be JSON/) });
  expect(upstreamChatBody(Buffer.from('[1]'), 'm')).toEqual({ problem: 'body must be a JSON object with messages' });
  expect(upstreamChatBody(Buffer.from('null'), 'm')).toEqual({ problem: 'body must be a JSON object with messages' });
});
