import { formatPortEvent, isHttpUrl, parsePortEvent, type PortEvent } from '../../../../sandbox-agent/contract/port-events';

const event: PortEvent = { key: 'c0ffee-1', callback: 'http://127.0.0.1:8000/cb', pid: 12, port: 3000, sandbox: 'box', detectedAt: '2026-04-16T10:00:00.000Z' };

test('an event survives its log line', () => {
  const line = formatPortEvent(event);
  expect(line.endsWith('\n')).toBe(true);
  expect(parsePortEvent(line.trim())).toEqual(event);
});

test.each([
  ['not json', 'x'],
  ['a non-http callback', JSON.stringify({ ...event, callback: 'file:///etc/passwd' })],
  ['a key with odd characters', JSON.stringify({ ...event, key: '../../x' })],
  ['a port out of range', JSON.stringify({ ...event, port: 0 })],
  ['a fractional pid', JSON.stringify({ ...event, pid: 1.5 })],
  ['a bad date', JSON.stringify({ ...event, detectedAt: 'yesterday' })],
  ['null', 'null'],
])('refuses %s', (_what, line) => {
  expect(parsePortEvent(line)).toBeUndefined();
});

test('extra fields written by a forger are dropped', () => {
  expect(parsePortEvent(JSON.stringify({ ...event, headers: { evil: 1 } }))).toEqual(event);
});

test('callback URLs: http and https with a host only', () => {
  expect(isHttpUrl('https://hooks.example.com/x?y=1')).toBe(true);
  expect(isHttpUrl('http://127.0.0.1:9/')).toBe(true);
  expect(isHttpUrl('ftp://example.com')).toBe(false);
  expect(isHttpUrl('/relative')).toBe(false);
  expect(isHttpUrl('javascript:alert(1)')).toBe(false);
});
