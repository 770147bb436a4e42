import { parseStat, parseTcpTable } from '../../../sandbox-agent/proc-net';

const TCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 41234 1 0000000000000000 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 41240 1 0000000000000000 20 4 30 10 -1
`;

const TCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 50001 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000000000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 50002 1 0000000000000000 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:1F92 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 50003 1 0000000000000000 100 0 0 10 0
   3: B80D0120000000000000000001000000:01BB 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 50004 1 0000000000000000 100 0 0 10 0
`;

test('IPv4 sockets: address, port, state and inode', () => {
  expect(parseTcpTable(TCP, 'tcp')).toEqual([
    { inode: '41234', localAddr: '127.0.0.1', port: 8080, state: 'LISTEN', protocol: 'tcp' },
    { inode: '1111', localAddr: '0.0.0.0', port: 22, state: 'LISTEN', protocol: 'tcp' },
    { inode: '41240', localAddr: '127.0.0.1', port: 8080, state: 'ESTABLISHED', protocol: 'tcp' },
  ]);
});

test('IPv6 sockets: addresses in RFC 5952 form', () => {
  expect(parseTcpTable(TCP6, 'tcp6').map((s) => [s.localAddr, s.port])).toEqual([
    ['::1', 8081],
    ['::', 80],
    ['::ffff:7f00:1', 8082],
    ['2001:db8::1', 443],
  ]);
});

test('empty or header-only tables have no sockets', () => {
  expect(parseTcpTable('', 'tcp')).toEqual([]);
  expect(parseTcpTable(TCP.split('\n')[0], 'tcp')).toEqual([]);
});

test('parseStat reads fields after a command name holding spaces and parentheses', () => {
  expect(parseStat('42 (my (weird) cmd) S 7 42 42 0 -1 4194560 ...')).toEqual({ state: 'S', ppid: 7, pgrp: 42 });
  expect(parseStat('garbage')).toBeUndefined();
});
