import { OciDocumentError, manifestOfIndex, parseImageConfig, parseManifest, processEnvironment } from '../../../../domain/images/oci-image';
import { pullFailure } from '../../../../domain/images/pull-failure';

const digest = (c: string) => `sha256:${c.repeat(64)}`;

test("the index's manifest is the one tagged with the name asked for", () => {
  const index = JSON.stringify({
    schemaVersion: 2,
    manifests: [
      { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: digest('a'), size: 10, annotations: { 'org.opencontainers.image.ref.name': 'other' } },
      { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: digest('b'), size: 349, annotations: { 'org.opencontainers.image.ref.name': 'image' } },
    ],
  });
  expect(manifestOfIndex(index, 'image')).toEqual({ mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: digest('b'), size: 349 });
  expect(() => manifestOfIndex(index, 'missing')).toThrow("no manifest tagged 'missing'");
  expect(() => manifestOfIndex('{', 'image')).toThrow(OciDocumentError);
});

test('a manifest names its config and layers; a bad digest is refused', () => {
  const manifest = { config: { mediaType: 'c', digest: digest('c'), size: 5 }, layers: [{ mediaType: 'l', digest: digest('d'), size: 7 }] };
  expect(parseManifest(JSON.stringify(manifest))).toEqual(manifest);
  expect(() => parseManifest(JSON.stringify({ ...manifest, layers: [{ digest: 'sha256:../../etc', size: 1 }] }))).toThrow('layer 0 has no valid sha256 descriptor');
  expect(() => parseManifest('[]')).toThrow('not a JSON object');
});

test('the run config: Env in order (last value of a name wins, entries without = dropped), WorkingDir, User, Entrypoint, Cmd', () => {
  const config = { architecture: 'amd64', config: { Env: ['PATH=/bin', 'FOO=a=b', 'BROKEN', 'FOO=c=d', 'EMPTY='], WorkingDir: '/data', User: '1000:1000', Entrypoint: ['/bin/sh', '-c'], Cmd: ['echo hi'] } };
  expect(parseImageConfig(JSON.stringify(config))).toEqual({
    env: [
      ['PATH', '/bin'],
      ['FOO', 'c=d'],
      ['EMPTY', ''],
    ],
    workingDir: '/data',
    user: '1000:1000',
    entrypoint: ['/bin/sh', '-c'],
    cmd: ['echo hi'],
  });
  // An image without a config section runs with nothing asked.
  expect(parseImageConfig('{"architecture": "amd64"}')).toEqual({ env: [], entrypoint: [], cmd: [] });
});

test("process environment: defaults, then the image's Env, then the sandbox's own envs win", () => {
  expect(processEnvironment({ PATH: '/usr/bin', HOME: '/home/user' }, [['PATH', '/opt/x/bin'], ['FOO', 'image']], { FOO: 'mine' })).toEqual({
    PATH: '/opt/x/bin',
    HOME: '/home/user',
    FOO: 'mine',
  });
});

describe('pull failures from what skopeo printed', () => {
  const fatal = (msg: string) => `time="2026-11-27T02:24:02Z" level=fatal msg="${msg.replace(/"/g, '\\"')}"\n`;
  test.each([
    ['initializing source docker://127.0.0.1:5799/test/nope:1: reading manifest 1 in 127.0.0.1:5799/test/nope: manifest unknown: manifest unknown', 'not_found'],
    ['initializing source docker://127.0.0.1:5797/priv/box:1: reading manifest 1 in 127.0.0.1:5797/priv/box: unauthorized: authentication required', 'unauthorized'],
    ['initializing source docker://127.0.0.1:5798/t/b:9: pinging container registry 127.0.0.1:5798: Get "http://127.0.0.1:5798/v2/": dial tcp 127.0.0.1:5798: connect: connection refused', 'unreachable'],
    ['writing blob: no space left on device', 'failed'],
  ])('%s', (msg, kind) => {
    expect(pullFailure(`time="x" level=warning msg="ignored"\n${fatal(msg)}`)).toEqual({ kind, reason: msg });
  });

  test('without a skopeo message, the last line is the reason', () => {
    expect(pullFailure('first\nsomething broke\n')).toEqual({ kind: 'failed', reason: 'something broke' });
    expect(pullFailure('')).toEqual({ kind: 'failed', reason: 'skopeo failed without a message' });
  });
});
