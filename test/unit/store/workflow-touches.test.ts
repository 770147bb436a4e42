import { WorkflowTouches } from '../../../store/workflow-touches';

// How a gateway tells lifecycle workflows their resource is in use: throttled, and kept up while requests last.
let sent: { workflowId: string; signal: string }[];
let touches: WorkflowTouches;

beforeEach(() => {
  jest.useFakeTimers({ now: 1_000_000 });
  sent = [];
  touches = new WorkflowTouches(
    async (workflowId, signal) => {
      sent.push({ workflowId, signal });
    },
    () => undefined,
    1_000,
  );
});

afterEach(() => {
  touches.close();
  jest.useRealTimers();
});

test('one touch per workflow per interval; other workflows are not held back', () => {
  touches.touch('a');
  touches.touch('a');
  touches.touch('b');
  expect(sent).toEqual([{ workflowId: 'a', signal: 'touch' }, { workflowId: 'b', signal: 'touch' }]);
  jest.advanceTimersByTime(999);
  touches.touch('a');
  expect(sent).toHaveLength(2);
  jest.advanceTimersByTime(1);
  touches.touch('a');
  expect(sent).toHaveLength(3);
});

test('an unthrottled signal or a noted use counts as the touch of its interval', () => {
  touches.signal('a', 'resumed');
  touches.touch('a');
  touches.noted('b');
  touches.touch('b');
  expect(sent).toEqual([{ workflowId: 'a', signal: 'resumed' }]);
});

test('a request held open keeps touching every interval until it ends', () => {
  const release = touches.hold('a');
  expect(sent).toHaveLength(1);
  jest.advanceTimersByTime(3_000);
  expect(sent).toHaveLength(4);
  jest.advanceTimersByTime(500);
  release();
  release();
  expect(sent).toHaveLength(4);
  jest.advanceTimersByTime(5_000);
  expect(sent).toHaveLength(4);
});

test('a failed signal is reported, not thrown', async () => {
  const errors: string[] = [];
  const failing = new WorkflowTouches(async () => Promise.reject(new Error('no such workflow')), (workflowId, signal, err) => errors.push(`${workflowId} ${signal}: ${err.message}`));
  failing.touch('gone');
  await jest.advanceTimersByTimeAsync(1);
  expect(errors).toEqual(['gone touch: no such workflow']);
});
