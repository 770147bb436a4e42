import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tar from 'tar';
import { contextEntryProblem } from '../../../../domain/images/build-context';
import { buildContext } from '../../../helpers/build-context';

test('entries inside the context pass; absolute paths, .. segments, devices and escaping links do not', () => {
  expect(contextEntryProblem('Dockerfile', 'File')).toBeUndefined();
  expect(contextEntryProblem('./src/a.txt', 'File')).toBeUndefined();
  expect(contextEntryProblem('src/', 'Directory')).toBeUndefined();
  expect(contextEntryProblem('src/link', 'SymbolicLink', '../Dockerfile')).toBeUndefined();
  expect(contextEntryProblem('src/hard', 'Link', 'src/a.txt')).toBeUndefined();
  expect(contextEntryProblem('/etc/passwd', 'File')).toBe("entry '/etc/passwd' has an absolute path");
  expect(contextEntryProblem('src/../../x', 'File')).toBe("entry 'src/../../x' has a '..' segment");
  expect(contextEntryProblem('dev', 'CharacterDevice')).toBe("entry 'dev' is a CharacterDevice; only files, folders and links inside the context are allowed");
  expect(contextEntryProblem('src/link', 'SymbolicLink', '../../etc')).toBe("entry 'src/link' is a link to '../../etc', outside the build context");
  expect(contextEntryProblem('link', 'SymbolicLink', '/etc/passwd')).toBe("entry 'link' is a link to '/etc/passwd', outside the build context");
  expect(contextEntryProblem('hard', 'Link', '../secret')).toBe("entry 'hard' is a link to '../secret', outside the build context");
});

test("the tests' context writer makes archives tar reads back as written", async () => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ctx-')), 'c.tar.gz');
  fs.writeFileSync(file, buildContext({ Dockerfile: 'FROM app\n', '../up.txt': 'x', l: { symlink: '/etc' }, h: { hardlink: 'Dockerfile' } }));
  const seen: [string, string, string | undefined, string | undefined][] = [];
  await tar.t({ file, strict: true, onReadEntry: (entry) => {
    seen.push([entry.path, entry.type, entry.linkpath, contextEntryProblem(entry.path, entry.type, entry.linkpath)]);
    entry.resume();
  } });
  expect(seen).toEqual([
    ['Dockerfile', 'File', undefined, undefined],
    ['../up.txt', 'File', undefined, "entry '../up.txt' has a '..' segment"],
    ['l', 'SymbolicLink', '/etc', "entry 'l' is a link to '/etc', outside the build context"],
    ['h', 'Link', 'Dockerfile', undefined],
  ]);
});
