import {
  ExecutionRequestError,
  executionOfSandboxId,
  jobSandboxId,
  finalExecutionStatus,
  MAX_TASK_CHUNK,
  taskChunks,
  jobRuntimeSettings,
  jobUsageTick,
  parseExecutionRequest,
  taskEnvironment,
  type ExecutionKey,
} from '../../../../domain/jobs/execution';
import { meterEventId } from '../../../../domain/billing/metering';
import { maxOverlap } from '../../../integration/jobs/helpers';

describe('parseExecutionRequest', () => {
  test('accepts tasks with env, memory and id', () => {
    expect(parseExecutionRequest({ tasks: [{ a: 1 }, {}], env: { K: 'v' }, memory: 512, id: 'run-1' })).toEqual({
      tasks: [{ a: 1 }, {}],
      env: { K: 'v' },
      memory: 512,
      id: 'run-1',
    });
  });

  test.each([
    [null, 'body must be'],
    [{}, 'body.tasks must be an array'],
    [{ tasks: [] }, 'body.tasks must hold at least one'],
    [{ tasks: [{}, []] }, 'body.tasks[1] must be an object'],
    [{ tasks: [{}, null] }, 'body.tasks[1] must be an object'],
    [{ tasks: Array.from({ length: 10_001 }, () => ({})) }, 'at most 10000'],
    [{ tasks: [{ big: 'x'.repeat(70_000) }] }, 'body.tasks[0] must be at most'],
    [{ tasks: [{}], env: { A: 1 } }, 'body.env.A must be a string'],
    [{ tasks: [{}], env: { '1A': 'x' } }, "body.env: '1A'"],
    [{ tasks: [{}], memory: 63 }, 'body.memory'],
    [{ tasks: [{}], memory: 100.5 }, 'body.memory'],
    [{ tasks: [{}], id: '' }, 'body.id'],
    [{ tasks: [{}], id: 'a/b' }, 'body.id'],
  ])('refuses bad body #%# naming the field', (body, message) => {
    expect(() => parseExecutionRequest(body)).toThrow(ExecutionRequestError);
    expect(() => parseExecutionRequest(body)).toThrow(message);
  });
});

describe('jobRuntimeSettings', () => {
  test('defaults', () => {
    expect(jobRuntimeSettings(undefined, {})).toEqual({
      image: 'base',
      command: ['node', 'task.js'],
      memoryMb: 1024,
      envs: {},
      maxConcurrentTasks: 10,
      maxRetries: 0,
      timeoutSeconds: 3600,
    });
  });

  test('the request overrides memory and adds env over the spec', () => {
    const settings = jobRuntimeSettings(
      { command: ['python3', 'run.py'], memory: 256, envs: [{ name: 'A', value: '1' }, { name: 'B', value: '2' }], maxConcurrentTasks: 4, maxRetries: 2, timeout: 30 },
      { memory: 2048, env: { B: 'x' } },
    );
    expect(settings).toEqual(expect.objectContaining({ command: ['python3', 'run.py'], memoryMb: 2048, envs: { A: '1', B: 'x' }, maxConcurrentTasks: 4, maxRetries: 2, timeoutSeconds: 30 }));
  });

  test('nonsense values fall back to defaults', () => {
    const settings = jobRuntimeSettings({ maxConcurrentTasks: 0, maxRetries: -1, timeout: 'x', command: [] }, {});
    expect(settings).toEqual(expect.objectContaining({ maxConcurrentTasks: 10, maxRetries: 0, timeoutSeconds: 3600, command: ['node', 'task.js'] }));
  });
});

test('taskEnvironment: index and arguments win over same-named keys; values become strings', () => {
  const env = taskEnvironment({ envs: { JOB: 'j', NAME: 'from-spec' } }, 7, { name: 'ada', count: 3, nested: { a: [1] }, 'with-dash': 'd', task_index: 'no' });
  expect(env).toEqual({
    JOB: 'j',
    NAME: 'ada',
    COUNT: '3',
    NESTED: '{"a":[1]}',
    WITH_DASH: 'd',
    TASK_INDEX: '7',
    TASK_ARGUMENTS: JSON.stringify({ name: 'ada', count: 3, nested: { a: [1] }, 'with-dash': 'd', task_index: 'no' }),
  });
});

test('finalExecutionStatus', () => {
  expect(finalExecutionStatus([{ status: 'succeeded', reason: 'exit' }])).toBe('succeeded');
  expect(finalExecutionStatus([{ status: 'succeeded', reason: 'exit' }, { status: 'failed', reason: 'exit' }])).toBe('failed');
  expect(finalExecutionStatus([{ status: 'failed', reason: 'timeout' }, { status: 'succeeded', reason: 'exit' }])).toBe('timeout');
  expect(finalExecutionStatus([{ status: 'failed', reason: 'timeout' }, { status: 'failed', reason: 'exit' }])).toBe('failed');
  expect(finalExecutionStatus([{ status: 'cancelled', reason: 'cancelled' }, { status: 'succeeded', reason: 'exit' }])).toBe('cancelled');
});

test('jobUsageTick: GB x seconds, one id per execution', () => {
  const key: ExecutionKey = { id: 'row-1', executionId: 'e', accountId: 'acc', workspace: 'ws', workspaceId: 'ws-id', jobId: 'j', jobName: 'job' };
  const tick = jobUsageTick(key, 512, 10, 1_000)!;
  expect(tick).toEqual(expect.objectContaining({ billingDimension: 'job_compute_runtime_gbs', resourceType: 'job', quantity: 5, resourceUuid: 'row-1' }));
  expect(meterEventId(tick)).toBe(meterEventId(jobUsageTick(key, 512, 10, 1_000)!));
  expect(meterEventId(tick)).not.toBe(meterEventId(jobUsageTick({ ...key, id: 'row-2' }, 512, 10, 1_000)!));
  expect(jobUsageTick(key, 512, 0, 1_000)).toBeUndefined();
});

test('maxOverlap counts intervals open at once; touching ones do not overlap', () => {
  expect(maxOverlap([[0, 10], [5, 15], [12, 20]])).toBe(2);
  expect(maxOverlap([[0, 10], [10, 20]])).toBe(1);
  expect(maxOverlap([[0, 10], [1, 9], [2, 8]])).toBe(3);
  expect(maxOverlap([])).toBe(0);
});

describe('taskChunks', () => {
  test.each([
    [1, 1, [[0]]],
    [5, 2, [[0], [1], [2], [3], [4]]],
    [10, 1, [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]],
  ])('%i tasks over %i lanes', (count, lanes, chunks) => {
    expect(taskChunks(count, lanes)).toEqual(chunks);
  });

  test('every task exactly once, in order, about four chunks per lane, none over the cap', () => {
    for (const [count, lanes] of [[1000, 20], [10_000, 3], [7, 20], [100, 100]]) {
      const chunks = taskChunks(count, lanes);
      expect(chunks.flat()).toEqual(Array.from({ length: count }, (_, i) => i));
      expect(Math.max(...chunks.map((c) => c.length))).toBeLessThanOrEqual(MAX_TASK_CHUNK);
      // Rounding the size up leaves a little under four per lane, never too few to keep every lane busy.
      expect(chunks.length).toBeGreaterThanOrEqual(Math.min(count, lanes * 3));
    }
  });
});

test('an execution sandbox id names its execution row again; other ids name none', () => {
  const row = '0b7f4c1e-93a2-4c7e-8f00-1234567890ab';
  expect(executionOfSandboxId(jobSandboxId(row))).toBe(row);
  for (const other of [row, `wl-${row}-r1`, 'warm_ab12', `job-${row}x`, 'job-']) expect(executionOfSandboxId(other)).toBeUndefined();
});
