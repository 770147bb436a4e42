import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { consoleFile } from '../../../api/console/static-files';
import { sandboxApiUrl } from '../../../api/console/sandbox-relay';
import { queryFromAddress, addressOf } from '../../../console/src/billing/billing-query';
import { metricsCsv } from '../../../console/src/billing/csv';
import { bucketTotals, type MetricsEntry } from '../../../console/src/billing/metrics';
import { stack } from '../../../console/src/billing/stack';

describe('consoleFile', () => {
  const top = fs.mkdtempSync(path.join(os.tmpdir(), 'console-files-'));
  const root = path.join(top, 'console');
  fs.mkdirSync(path.join(root, 'assets'), { recursive: true });
  fs.writeFileSync(path.join(root, 'index.html'), '<!doctype html>');
  fs.writeFileSync(path.join(root, 'assets', 'index-AbCdEf12.js'), '');
  fs.writeFileSync(path.join(top, 'secret.txt'), 'outside');
  afterAll(() => fs.rmSync(top, { recursive: true, force: true }));

  it('finds the files of the folder', () => {
    expect(consoleFile(root, 'index.html')).toBe(path.join(root, 'index.html'));
    expect(consoleFile(root, 'assets/index-AbCdEf12.js')).toBe(path.join(root, 'assets', 'index-AbCdEf12.js'));
  });

  it.each(['../secret.txt', '..%2fsecret.txt', 'assets/../../secret.txt', '%2e%2e/secret.txt', '/../secret.txt', 'assets', '', 'index.html%00', '%E0%A4%A'])(
    'answers nothing for %s (outside, a folder, a NUL, bad escapes)',
    (requested) => expect(consoleFile(root, requested)).toBeUndefined(),
  );
});

describe('sandboxApiUrl', () => {
  const template = 'http://127.0.0.1:8082/{workspace_id}/{sandbox_id}';
  it('renders the sandbox address from the template', () => {
    expect(sandboxApiUrl(template, 'default', 'box-1')).toEqual({ url: 'http://127.0.0.1:8082/default/box-1' });
    expect(sandboxApiUrl('http://{sandbox_id}.{workspace_id}.sb.example', 'ws', 'box')).toEqual({ url: 'http://box.ws.sb.example' });
  });
  it.each([
    [null, 'box', "'workspace'"],
    ['ws', '', "'sandbox'"],
    ['ws/../x', 'box', "'workspace'"],
    ['ws', 'Box', "'sandbox'"],
    ['ws', 'box?x=1', "'sandbox'"],
  ])('refuses workspace %p sandbox %p, naming %s', (workspace, sandbox, field) => {
    const answer = sandboxApiUrl(template, workspace, sandbox);
    expect('problem' in answer && answer.problem).toContain(field);
  });
});

const entry = (name: string, costs: number[]): MetricsEntry => ({
  resourceName: name,
  summary: { cost: costs.reduce((a, b) => a + b, 0) },
  timeseries: costs.map((cost, i) => ({ timestamp: `2026-01-0${i + 1}T00:00:00Z`, cost, usage: { gbs: cost * 10 } })),
});

describe('billing logic of the console', () => {
  it('stacks series as running sums, rounded to the nano-dollar', () => {
    expect(stack([{ label: 'a', costs: [0.1, 0] }, { label: 'b', costs: [0.2, 1] }, { label: 'c', costs: [0, 0.000000001] }])).toEqual([
      [0.1, 0],
      [0.3, 1],
      [0.3, 1.000000001],
    ]);
  });

  it('sums each bucket over the groups', () => {
    expect(bucketTotals([entry('a', [0.1, 0.2]), entry('b', [0.2, 0])])).toEqual([0.3, 0.2]);
  });

  it('writes one CSV row per group and bucket, quoting what needs it', () => {
    const csv = metricsCsv([entry('plain', [1, 0]), entry('has,comma "and quote"', [0.5, 0])], ['resource_name']);
    expect(csv.split('\r\n')).toEqual([
      'bucket_start,resource_name,cost_usd,usage_gbs,usage_count,usage_hours',
      '2026-01-01T00:00:00Z,plain,1,10,,',
      '2026-01-02T00:00:00Z,plain,0,0,,',
      '2026-01-01T00:00:00Z,"has,comma ""and quote""",0.5,5,,',
      '2026-01-02T00:00:00Z,"has,comma ""and quote""",0,0,,',
      '',
    ]);
  });

  it('reads the query from the address, with defaults for what is missing or unknown', () => {
    const now = Date.parse('2026-03-10T15:00:00Z');
    expect(queryFromAddress('', now)).toEqual({ startTime: '2026-03-04T00:00:00Z', endTime: '2026-03-11T00:00:00Z', resolution: 'auto', groupBy: ['resource_type', 'billing_dimension'], limit: 100 });
    expect(queryFromAddress('?start=2026-01-01&end=2026-02-01T00:00:00Z&resolution=daily&groupBy=workspace,label,resource_name&limit=5', now)).toEqual({
      startTime: '2026-01-01T00:00:00Z',
      endTime: '2026-02-01T00:00:00Z',
      resolution: 'daily',
      groupBy: ['workspace', 'resource_name'],
      limit: 5,
    });
    expect(queryFromAddress('?resolution=yearly&limit=500&groupBy=nothing', now)).toMatchObject({ resolution: 'auto', limit: 100, groupBy: ['resource_type'] });
    const query = queryFromAddress('?groupBy=resource_uuid&limit=7', now);
    expect(queryFromAddress(addressOf(query), now)).toEqual(query);
  });
});
