import { revisionState } from '../../../cli/hangar/deploy-folder';
import { progressPrinter } from '../../../cli/hangar/progress';
import { parseCopyEnd } from '../../../cli/hangar/sandbox-cp';
import { exitCodeOf } from '../../../cli/hangar/sandbox-shell';

describe('progress', () => {
  test('without a terminal: one plain line per change of message, no bar', () => {
    let text = '';
    const printer = progressPrinter((chunk) => (text += chunk), false);
    printer({ stage: 'upload', fraction: 0.25, message: 'a quarter', transient: true });
    printer({ stage: 'upload', fraction: 0.5, message: 'half' });
    printer({ stage: 'upload', fraction: 0.5, message: 'half' });
    printer({ stage: 'deploy', message: 'DEPLOYED' });
    printer.done();
    expect(text).toBe('upload: half\ndeploy: DEPLOYED\n');
  });

  test('on a terminal: a bar redrawn in place, a new line per stage, cut to the width', () => {
    let text = '';
    const printer = progressPrinter((chunk) => (text += chunk), true, 60);
    printer({ stage: 'upload', fraction: 0.25, message: 'a quarter', transient: true });
    printer({ stage: 'upload', fraction: 1, message: 'x'.repeat(200) });
    printer({ stage: 'build', message: 'step 1/3' });
    printer.done();
    const lines = text.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toContain('\r\u001b[2Kupload [######------------------]  25% a quarter');
    expect(lines[0].split('\r\u001b[2K').at(-1)!.length).toBe(59);
    expect(lines[1]).toBe(`\r\u001b[2Kbuild ${' '.repeat(33)}step 1/3`);
    expect(lines[2]).toBe('');
  });

  test('a terminal of unknown width (0) is drawn 100 columns wide', () => {
    let text = '';
    progressPrinter((chunk) => (text += chunk), true, 0)({ stage: 'deploy', message: 'y'.repeat(200) });
    expect(text.length).toBe('\r\u001b[2K'.length + 99);
  });
});

describe('sandbox cp ends', () => {
  test.each([
    ['box:/tmp/a', { sandbox: 'box', path: '/tmp/a' }],
    ['my-box-2:/', { sandbox: 'my-box-2', path: '/' }],
    ['./box:/tmp', { local: './box:/tmp' }],
    ['/abs/path', { local: '/abs/path' }],
    ['file.txt', { local: 'file.txt' }],
  ])('%s', (word, end) => expect(parseCopyEnd(word)).toEqual(end));

  test('a relative sandbox path is a usage error saying the form', () => {
    expect(() => parseCopyEnd('box:tmp/a')).toThrow("'box:tmp/a': the sandbox path must be absolute (box:/path/in/sandbox)");
  });
});

test("the terminal's close reason gives the shell's exit code", () => {
  expect(exitCodeOf('the shell exited with code 4')).toBe(4);
  expect(exitCodeOf('the shell exited')).toBe(0);
});

describe("a revision's state from the resource's events", () => {
  const event = (status: string, message: string) => ({ status, message });
  test.each([
    ['no event of it yet', [event('DEPLOYED', 'revision 1: serving')], 2, { settled: false, deployed: false }],
    ['deploying', [event('DEPLOYING', 'revision 2: starting')], 2, { settled: false, deployed: false }],
    ['deployed', [event('DEPLOYING', 'revision 2: starting'), event('DEPLOYED', 'revision 2: serving')], 2, { settled: true, deployed: true }],
    ['failed alone', [event('FAILED', 'revision 1 failed: exited with code 7')], 1, { settled: true, deployed: false }],
    ['failed while an older one serves', [event('DEPLOYED', 'revision 2 failed: x; revision 1 keeps serving')], 2, { settled: true, deployed: false }],
    ["revision 10's events are not revision 1's", [event('DEPLOYED', 'revision 10: serving')], 1, { settled: false, deployed: false }],
  ])('%s', (_what, events, revision, expected) => expect(revisionState(events, revision)).toMatchObject(expected));
});
