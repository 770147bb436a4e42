import { withRecordedImage } from '../../../../domain/images/recorded-image';
import { defaultWorkloadImage } from '../../../../domain/workloads/platform-code';
import { jobRuntimeSettings } from '../../../../domain/jobs/execution';
import type { WorkloadSpec } from '../../../../domain/workloads/workload';

const spec = (value: WorkloadSpec) => value;

describe('the image recorded in a stored spec', () => {
  test('a create naming none records the default, keeping the rest of the spec; one naming an image keeps it', () => {
    expect(withRecordedImage({}, undefined)).toEqual({ runtime: { image: 'base-image' } });
    expect(withRecordedImage(spec({ runtime: { memory: 512 }, region: 'x' }), undefined)).toEqual({ runtime: { memory: 512, image: 'base-image' }, region: 'x' });
    expect(withRecordedImage({ runtime: { image: '' } }, undefined)).toEqual({ runtime: { image: 'base-image' } });
    expect(withRecordedImage({ runtime: { image: 'base' } }, undefined)).toEqual({ runtime: { image: 'base' } });
    expect(withRecordedImage({}, undefined, 'base')).toEqual({ runtime: { image: 'base' } });
  });

  test('an update naming none keeps the image recorded before, whatever the default', () => {
    expect(withRecordedImage(spec({ runtime: { memory: 1 } }), { runtime: { image: 'base' } })).toEqual({ runtime: { memory: 1, image: 'base' } });
    expect(withRecordedImage({}, { runtime: { image: 'tools:1' } }, 'base-image')).toEqual({ runtime: { image: 'tools:1' } });
    // A spec stored before images were recorded ran on base.
    expect(withRecordedImage({}, {})).toEqual({ runtime: { image: 'base' } });
    expect(withRecordedImage({ runtime: { image: 'base-image' } }, { runtime: { image: 'base' } })).toEqual({ runtime: { image: 'base-image' } });
  });

  test("the platform's own code (an integration's MCP server, a provider model) defaults to base, a user's code to base-image", () => {
    expect(defaultWorkloadImage('functions', { integrationConnections: ['mail'] })).toBe('base');
    expect(defaultWorkloadImage('models', { runtime: { type: 'openai' } })).toBe('base');
    for (const kind of ['agents', 'functions', 'models', 'jobs'] as const) expect(defaultWorkloadImage(kind, { runtime: {} })).toBe('base-image');
  });

  test('a job execution of a spec naming no image (stored before they were recorded) runs on base', () => {
    expect(jobRuntimeSettings({}, {}).image).toBe('base');
    expect(jobRuntimeSettings({ image: 'base-image' }, {}).image).toBe('base-image');
  });
});
