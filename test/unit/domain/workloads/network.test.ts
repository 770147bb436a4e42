import { workloadNetwork, workloadNetworkProblem } from '../../../../domain/workloads/network';

test('a workload without spec.network has loopback only; with one, that policy', () => {
  expect(workloadNetwork({})).toEqual({ internet: false });
  expect(workloadNetwork({ network: { allowedDomains: ['pypi.org'] } })).toEqual({ allowedDomains: ['pypi.org'] });
});

test("a workload's spec.network is checked by the sandboxes' rules, naming the entry", () => {
  expect(workloadNetworkProblem('agents', {}, true)).toBeUndefined();
  expect(workloadNetworkProblem('jobs', { network: { allowedDomains: ['pypi.org', '*.pythonhosted.org', '10.0.0.0/8'] } }, true)).toBeUndefined();
  expect(workloadNetworkProblem('functions', { network: { proxy: { forbiddenDomains: ['ok.test', 'a b'] } } }, true)).toBe(
    "body.spec.network.proxy.forbiddenDomains[1] 'a b' is not a domain name (optionally '*.' and a domain), an IP address or a CIDR block",
  );
});

test('where nodes have no network, only internet: false is kept (the same answer as for a sandbox)', () => {
  expect(workloadNetworkProblem('agents', { network: { allowedDomains: ['pypi.org'] } }, false)).toMatch(/^body\.spec\.network: sandboxes of this platform have no outbound network/);
  expect(workloadNetworkProblem('agents', { network: { internet: false } }, false)).toBeUndefined();
});

test('a provider model runs on no node: a spec.network is refused rather than ignored', () => {
  expect(workloadNetworkProblem('models', { runtime: { type: 'openai' }, network: { internet: false } }, true)).toMatch(/provider model runs on no node/);
  expect(workloadNetworkProblem('models', { network: { allowedDomains: ['hf.co'] } }, true)).toBeUndefined();
});
