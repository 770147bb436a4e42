import dgram from 'node:dgram';
import dns from 'node:dns';
import net from 'node:net';
import tls from 'node:tls';
import { httpHost, splitHostPort, tlsServerName } from '../../../../runtime/network/client-hello';
import { RCODE_NXDOMAIN, dnsAnswer, parseDnsQuery } from '../../../../runtime/network/dns-answer';

/** The first bytes a real client sends, caught by a loopback server that never answers. */
async function firstBytes(send: (port: number) => void): Promise<Buffer> {
  return new Promise((resolve) => {
    const server = net.createServer((socket) => {
      socket.once('data', (data: Buffer) => {
        socket.destroy();
        server.close();
        resolve(data);
      });
    });
    server.listen(0, '127.0.0.1', () => send((server.address() as net.AddressInfo).port));
  });
}

test("the server name of Node's own ClientHello is read, and a hello cut short asks for more", async () => {
  const hello = await firstBytes((port) => {
    const client = tls.connect({ host: '127.0.0.1', port, servername: 'files.pythonhosted.org' });
    client.on('error', () => undefined);
  });
  expect(tlsServerName(hello)).toEqual({ host: 'files.pythonhosted.org' });
  expect(tlsServerName(hello.subarray(0, hello.length - 1))).toEqual({ need: 'more' });
  expect(tlsServerName(Buffer.from('GET / HTTP/1.1\r\n\r\n'))).toEqual({ problem: 'not a TLS handshake' });
});

test('a TLS client that sends no server name (a literal address) is named as such', async () => {
  const hello = await firstBytes((port) => {
    const client = tls.connect({ host: '127.0.0.1', port });
    client.on('error', () => undefined);
  });
  expect(tlsServerName(hello)).toEqual({ problem: 'a ClientHello without a server name (SNI)' });
});

test('HTTP Host headers and CONNECT targets split into host and port', () => {
  expect(httpHost(Buffer.from('GET / HTTP/1.1\r\nHost: Example.com:8080\r\nAccept: */*\r\n\r\n'))).toEqual({ host: 'Example.com', port: 8080 });
  expect(httpHost(Buffer.from('GET / HTTP/1.1\r\nHost: example.com\r\n'))).toEqual({ need: 'more' });
  expect(httpHost(Buffer.from('GET / HTTP/1.1\r\nAccept: */*\r\n\r\n'))).toEqual({ problem: 'an HTTP request without a valid Host header' });
  expect(splitHostPort('[2001:db8::1]:443')).toEqual({ host: '2001:db8::1', port: 443 });
  expect(splitHostPort('example.com:99999')).toBeUndefined();
  expect(splitHostPort('a b')).toBeUndefined();
});

test("Node's resolver reads the answers: A records for a known name, NXDOMAIN for a refused one, none for AAAA", async () => {
  const server = dgram.createSocket('udp4');
  server.on('message', (packet, from) => {
    const question = parseDnsQuery(packet)!;
    const answer = question.name === 'allowed.test' ? dnsAnswer(question, 0, ['203.0.113.2', '203.0.113.3']) : dnsAnswer(question, RCODE_NXDOMAIN);
    server.send(answer, from.port, from.address);
  });
  await new Promise<void>((resolve) => server.bind(0, '127.0.0.1', resolve));
  try {
    const resolver = new dns.promises.Resolver();
    resolver.setServers([`127.0.0.1:${server.address().port}`]);
    expect(await resolver.resolve4('allowed.test')).toEqual(['203.0.113.2', '203.0.113.3']);
    await expect(resolver.resolve6('allowed.test')).rejects.toMatchObject({ code: 'ENODATA' });
    await expect(resolver.resolve4('refused.test')).rejects.toMatchObject({ code: 'ENOTFOUND' });
  } finally {
    server.close();
  }
});
