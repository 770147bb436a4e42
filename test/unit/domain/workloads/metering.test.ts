import { workloadUsageTicks, type WorkloadMeterPeriod } from '../../../../domain/workloads/metering';
import type { WorkloadKind } from '../../../../domain/workloads/workload';

const GB = 1024 ** 3;

function period(kind: WorkloadKind, overrides: Partial<WorkloadMeterPeriod> = {}): WorkloadMeterPeriod {
  return {
    key: { id: 'r-1', workspace: 'ws', workspaceId: 'ws-id', kind, name: 'w' },
    accountId: 'acc',
    from: Date.UTC(2026, 0, 1, 0, 0, 0),
    to: Date.UTC(2026, 0, 1, 0, 1, 0),
    memoryMb: 512,
    bundleBytes: GB / 2,
    ...overrides,
  };
}

test('an agent: compute is its memory limit x seconds, storage its bundle x seconds', () => {
  const ticks = workloadUsageTicks(period('agents'));
  expect(ticks).toEqual([
    expect.objectContaining({ resourceType: 'agent', billingDimension: 'agent_image_storage_gbs', quantity: 30, resourceUuid: 'r-1', periodStart: new Date(Date.UTC(2026, 0, 1)) }),
    expect.objectContaining({ resourceType: 'agent', billingDimension: 'agent_compute_runtime_gbs', quantity: 30 }),
  ]);
});

test('an MCP server bills as mcp_server; a job only its storage; a model nothing', () => {
  expect(workloadUsageTicks(period('functions')).map((t) => `${t.resourceType}/${t.billingDimension}`)).toEqual([
    'mcp_server/mcp_server_image_storage_gbs',
    'mcp_server/mcp_server_compute_runtime_gbs',
  ]);
  expect(workloadUsageTicks(period('jobs')).map((t) => t.billingDimension)).toEqual(['job_image_storage_gbs']);
  expect(workloadUsageTicks(period('models'))).toEqual([]);
});

test('empty periods and zero quantities give no ticks; quantities are rounded to 1e-6', () => {
  expect(workloadUsageTicks(period('agents', { to: Date.UTC(2026, 0, 1) }))).toEqual([]);
  expect(workloadUsageTicks(period('agents', { memoryMb: 0 })).map((t) => t.billingDimension)).toEqual(['agent_image_storage_gbs']);
  const tiny = workloadUsageTicks(period('agents', { bundleBytes: 1000, memoryMb: 0 }));
  expect(tiny[0].quantity).toBe(Math.round((1000 / GB) * 60 * 1e6) / 1e6);
});

test("storage counts the image the workspace built for the workload with its bundle", () => {
  const [storage] = workloadUsageTicks(period('jobs', { bundleBytes: GB / 2, imageBytes: GB }));
  expect(storage).toEqual(expect.objectContaining({ billingDimension: 'job_image_storage_gbs', quantity: 90 }));
});
