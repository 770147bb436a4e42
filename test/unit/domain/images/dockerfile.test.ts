import { DockerfileError, parseDockerfile, rewriteDockerfile, splitInstructions } from '../../../../domain/images/dockerfile';

const refusal = (text: string): string => {
  try {
    parseDockerfile(text);
  } catch (err) {
    expect(err).toBeInstanceOf(DockerfileError);
    return (err as Error).message;
  }
  throw new Error('the Dockerfile was accepted');
};

test('instructions with their lines; continuations joined, comments and blank lines dropped', () => {
  const text = '# a comment\nARG V=1\nFROM app:1\n\nRUN echo a \\\n  # inside\n  && echo b\nenv A=1\n';
  expect(splitInstructions(text)).toEqual([
    { line: 2, keyword: 'ARG', args: 'V=1' },
    { line: 3, keyword: 'FROM', args: 'app:1' },
    { line: 5, keyword: 'RUN', args: 'echo a   && echo b' },
    { line: 8, keyword: 'ENV', args: 'A=1' },
  ]);
});

test('bases: an image of the workspace, of a registry, scratch and an earlier stage', () => {
  const parsed = parseDockerfile('FROM 127.0.0.1:5000/team/box:1 AS build\nRUN true\nFROM app\nCOPY --from=build /a /a\nFROM scratch\nFROM build\n');
  expect(parsed.bases.map((base) => [base.kind, base.reference, base.line])).toEqual([
    ['registry', '127.0.0.1:5000/team/box:1', 1],
    ['workspace', 'app', 3],
    ['scratch', 'scratch', 5],
    ['stage', 'build', 6],
  ]);
  expect(parsed.bases[1]).toMatchObject({ image: { name: 'app', tag: 'latest' } });
});

test('unsupported instructions and unreachable sources are refused naming the line', () => {
  expect(refusal('FROM app:1\nRUN true\nHEALTHCHECK CMD true\n')).toBe('Dockerfile line 3: the instruction HEALTHCHECK is not supported; supported: FROM, RUN, COPY, ADD, ENV, WORKDIR, USER, ARG, LABEL, EXPOSE, ENTRYPOINT, CMD');
  expect(refusal('FROM app:1\nADD https://example.com/x /x\n')).toBe('Dockerfile line 2: ADD takes files of the build context only; URLs are not fetched (a build has no internet)');
  expect(refusal('FROM app:1\nCOPY --from=other:1 /a /a\n')).toMatch(/^Dockerfile line 2: COPY --from=other:1: copies come from the context or an earlier stage/);
  expect(refusal('RUN true\nFROM app\n')).toMatch(/^Dockerfile line 1: RUN before any FROM/);
  expect(refusal('FROM base\n')).toMatch(/^Dockerfile line 1: FROM 'base': a built-in image is not one a build can start from/);
  expect(refusal('FROM base-image\n')).toMatch(/^Dockerfile line 1: FROM 'base-image': a built-in image/);
  expect(refusal('FROM Team/App\n')).toMatch(/^Dockerfile line 1: FROM: image reference 'Team\/App' is malformed/);
  expect(refusal('ARG B=app\nFROM $B\n')).toBe("Dockerfile line 2: FROM '$B': variables are not supported in FROM");
  expect(refusal('# nothing\n')).toMatch(/no FROM/);
  expect(refusal('FROM team/app\n')).toMatch(/names neither an image of the workspace/);
});

test('the rewrite points each outside base at its local copy and keeps every other instruction', () => {
  const parsed = parseDockerfile('FROM app:1 AS one\nRUN echo a \\\n b\nFROM one\n');
  expect(rewriteDockerfile(parsed, new Map([['app:1', 'oci:/store/layouts/abc:image']]))).toBe('FROM oci:/store/layouts/abc:image AS one\nRUN echo a  b\nFROM one\n');
});
