import { imageExists, imageName } from '../../../runtime/image';

describe('image references', () => {
  test('[namespace/]name[:tag] resolves by name; the built-in image answers to base and base-image', () => {
    expect(imageName('base')).toBe('base');
    expect(imageName('base-image')).toBe('base');
    expect(imageName('blaxel/base-image:latest')).toBe('base');
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
