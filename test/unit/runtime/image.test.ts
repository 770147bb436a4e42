import { BUILTIN_IMAGE_NAMES, isBuiltBaseImage, isRegistryImage, pullsEveryTime } from '../../../domain/images/builtin';
import { availableImages, imageExists, imageName, isHostImage } from '../../../runtime/image';

describe('image references', () => {
  test('[namespace/]name[:tag] resolves by name; base (the host) and base-image (built by the node) are two images', () => {
    expect(imageName('base')).toBe('base');
    expect(imageName('base-image')).toBe('base-image');
    expect(imageName('blaxel/base-image:latest')).toBe('base-image');
    expect(isBuiltBaseImage('blaxel/base-image:latest')).toBe(true);
    expect(isBuiltBaseImage('base')).toBe(false);
    expect(isHostImage('hangar/base:latest')).toBe(true);
    expect(isHostImage('base-image')).toBe(false);
    expect(imageName('hangar/base')).toBe('base');
    expect(imageName('registry.example/team/base:3.1')).toBe('base');
    expect(imageName('base@sha256:abc')).toBe('base');
    expect(imageName('blaxel/nodejs:latest')).toBe('nodejs');
  });

  test('only the built-in images exist', () => {
    expect(imageExists('blaxel/base-image:latest')).toBe(true);
    expect(imageExists('blaxel/nodejs:latest')).toBe(false);
    expect(imageExists('')).toBe(false);
  });
});

test("the domain's list of built-in images is the runtime's, and only registry references are pulled", () => {
  expect([...BUILTIN_IMAGE_NAMES]).toEqual(availableImages());
  expect(isRegistryImage('127.0.0.1:5000/team/box:1')).toBe(true);
  expect(isRegistryImage('registry.example.com/box')).toBe(true);
  // Built-in whatever it is written with; a name without a registry is one of the platform's own.
  expect(isRegistryImage('registry.example/team/base:3.1')).toBe(false);
  expect(isRegistryImage('registry.example/team/base-image:3.1')).toBe(false);
  expect(isRegistryImage('blaxel/nodejs:latest')).toBe(false);
  expect(isRegistryImage('127.0.0.1:5000/Bad')).toBe(false);
});

test('a registry image without a version or at latest is pulled before every start; a fixed tag or digest once per node', () => {
  expect(pullsEveryTime('127.0.0.1:5000/box')).toBe(true);
  expect(pullsEveryTime('127.0.0.1:5000/box:latest')).toBe(true);
  expect(pullsEveryTime('127.0.0.1:5000/box:1')).toBe(false);
  expect(pullsEveryTime(`127.0.0.1:5000/box:latest@sha256:${'a'.repeat(64)}`)).toBe(false);
});
