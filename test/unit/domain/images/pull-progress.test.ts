import fc from 'fast-check';
import { ociPlatform, pullTotalsOf } from '../../../../domain/images/oci-image';
import { completedProgress, PercentMilestones, pullMessage, withPercent } from '../../../../domain/images/pull-progress';

const digest = (c: string) => `sha256:${c.repeat(64)}`;

describe('a pull percentage', () => {
  test('is the whole percent of the total, at most 99 until the pull is over, 100 then', () => {
    expect(withPercent({ bytesDone: 0, layersDone: 0, bytesTotal: 200, layersTotal: 2 }).percent).toBe(0);
    expect(withPercent({ bytesDone: 139, layersDone: 1, bytesTotal: 200, layersTotal: 2 }).percent).toBe(69);
    expect(withPercent({ bytesDone: 200, layersDone: 2, bytesTotal: 200, layersTotal: 2 }).percent).toBe(99);
    expect(withPercent({ bytesDone: 10, layersDone: 0 }).percent).toBeUndefined();
    expect(completedProgress(withPercent({ bytesDone: 150, layersDone: 1, bytesTotal: 200, layersTotal: 2 }))).toEqual({ bytesDone: 200, layersDone: 1, bytesTotal: 200, layersTotal: 2, percent: 100 });
  });

  test('says how far of how much in the message', () => {
    expect(pullMessage('r/a:1', withPercent({ bytesDone: 4_200_000, layersDone: 0, bytesTotal: 6_000_000, layersTotal: 1 }))).toBe("pulling image 'r/a:1': 4.2 of 6.0 MB received (70 %), 0 of 1 layer unpacked");
    expect(pullMessage('r/a:1', { bytesDone: 4_200_000, layersDone: 2 })).toBe("pulling image 'r/a:1': 4.2 MB received, 2 layers unpacked");
  });
});

describe('the tenths a pull passes', () => {
  test('each tenth from 10 to 90 is told once, in order, however the percentages a watcher sees step (a pull seen from its start)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 99 }), { maxLength: 40 }), (steps) => {
        const seen = [...steps].sort((a, b) => a - b);
        const milestones = new PercentMilestones(0);
        const told = seen.flatMap((percent) => milestones.passed(percent));
        const top = seen.at(-1) ?? 0;
        expect(told).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90].filter((tenth) => tenth <= top));
      }),
    );
  });

  test('a pull begun again (a lower percentage) tells its tenths again from there; one joined half-way tells none before', () => {
    const milestones = new PercentMilestones(0);
    expect(milestones.passed(35)).toEqual([10, 20, 30]);
    expect(milestones.passed(4)).toEqual([]);
    expect(milestones.passed(21)).toEqual([10, 20]);
    const joined = new PercentMilestones(55);
    expect(joined.passed(72)).toEqual([60, 70]);
    const unknown = new PercentMilestones();
    expect(unknown.passed(40)).toEqual([]);
    expect(unknown.passed(undefined)).toEqual([]);
    expect(unknown.passed(51)).toEqual([50]);
  });

  test('a pull begun again is known by its start even when it is seen further on than the last one was', () => {
    const milestones = new PercentMilestones(0, 'first');
    expect(milestones.passed(42, 'first')).toEqual([10, 20, 30, 40]);
    expect(milestones.passed(47, 'second')).toEqual([10, 20, 30, 40]);
    expect(milestones.passed(61, 'second')).toEqual([50, 60]);
    // A waiter that started the pull saw no start yet: the first it sees is the same pull.
    const starter = new PercentMilestones(0);
    expect(starter.passed(15, 'only')).toEqual([10]);
    expect(starter.passed(25, 'only')).toEqual([20]);
  });
});

describe('the totals read from the manifest before the copy', () => {
  const manifest = JSON.stringify({
    schemaVersion: 2,
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: digest('c'), size: 300 },
    layers: [
      { mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: digest('a'), size: 1000 },
      { mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: digest('b'), size: 234 },
    ],
  });

  test("a manifest gives its layers' bytes and count", () => {
    const read = pullTotalsOf(manifest, ociPlatform('x64'));
    expect(read).toEqual({ totals: expect.objectContaining({ bytesTotal: 1234, layersTotal: 2 }) });
  });

  test("an index (OCI's or Docker's list) gives the manifest of the node's platform; none for it is an error naming the platform", () => {
    const index = JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.docker.distribution.manifest.list.v2+json',
      manifests: [
        { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: digest('1'), size: 500, platform: { os: 'linux', architecture: 'arm64' } },
        { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: digest('2'), size: 500, platform: { os: 'linux', architecture: 'amd64' } },
      ],
    });
    expect(ociPlatform('x64')).toEqual({ os: 'linux', architecture: 'amd64' });
    expect(pullTotalsOf(index, ociPlatform('x64'))).toEqual({ manifest: digest('2') });
    expect(pullTotalsOf(index, ociPlatform('arm64'))).toEqual({ manifest: digest('1') });
    expect(() => pullTotalsOf(index, ociPlatform('s390x'))).toThrow("the image's index has no manifest for linux/s390x");
  });
});
