import fc from 'fast-check';
import { LineFramer, OutputLog, prefixedLine, type OutputChunk } from '../../../sandbox-agent/output-log';

test('a follower joining at any point gets every chunk exactly once, in order', () => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ stream: fc.constantFrom('stdout' as const, 'stderr' as const), text: fc.string({ minLength: 1, maxLength: 20 }) }), { maxLength: 50 }),
      fc.nat(),
      (chunks, joinAt) => {
        const log = new OutputLog(1 << 20);
        const seen: OutputChunk[] = [];
        let ended = 0;
        const join = Math.min(joinAt, chunks.length);
        chunks.slice(0, join).forEach((c) => log.append(c.stream, c.text));
        log.follow({ chunk: (c) => seen.push(c), end: () => ended++ });
        chunks.slice(join).forEach((c) => log.append(c.stream, c.text));
        log.end();
        return JSON.stringify(seen) === JSON.stringify(chunks) && ended === 1;
      },
    ),
  );
});

test('a follower after the end gets the replay and the end at once', () => {
  const log = new OutputLog(100);
  log.append('stdout', 'a');
  log.end();
  const seen: string[] = [];
  log.follow({ chunk: (c) => seen.push(c.text), end: () => seen.push('<end>') });
  expect(seen).toEqual(['a', '<end>']);
});

test('past its cap the log drops the oldest output and counts it', () => {
  const log = new OutputLog(10);
  log.append('stdout', '12345');
  log.append('stderr', '67890');
  log.append('stdout', 'abc');
  expect(log.text()).toBe('67890abc');
  expect(log.text('stdout')).toBe('abc');
  expect(log.droppedBytes).toBe(5);
});

test('LineFramer cuts whole lines per stream and flushes the unfinished ones', () => {
  const lines: string[] = [];
  const framer = new LineFramer((stream, text) => lines.push(prefixedLine(stream, text)));
  framer.chunk({ stream: 'stdout', text: 'hel' });
  framer.chunk({ stream: 'stderr', text: 'warn\nsecond ' });
  framer.chunk({ stream: 'stdout', text: 'lo\nworld\n\nlast' });
  framer.flush();
  expect(lines).toEqual(['stderr:warn\n', 'stdout:hello\n', 'stdout:world\n', 'stdout:\n', 'stdout:last\n', 'stderr:second \n']);
});
