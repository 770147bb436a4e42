import net from 'node:net';

/**
 * A TCP relay on loopback that passes what the upstream sends at most `bytesPerSecond`, so a
 * pull of a few MB lasts seconds: long enough to see it under way, or to kill a worker in it.
 * Requests go through at full speed. Its address (`127.0.0.1:<port>`) is a registry on loopback.
 * `hold()` stops passing the upstream's answers until `release()`: a pull under way stays under
 * way for as long as a test needs (one joining it, a worker killed in it), whatever the machine's speed.
 */
export async function startSlowProxy(upstream: string, bytesPerSecond: number): Promise<{ address: string; hold(): void; release(): void; close(): Promise<void> }> {
  const [host, port] = [upstream.slice(0, upstream.lastIndexOf(':')), Number(upstream.slice(upstream.lastIndexOf(':') + 1))];
  const sockets = new Set<net.Socket>();
  let held = false;
  const stalled = new Set<() => void>();
  const server = net.createServer((client) => {
    const remote = net.connect(port, host);
    sockets.add(client).add(remote);
    client.pipe(remote);
    remote.on('data', (chunk: Buffer) => {
      // Paused for as long as the chunk takes at the rate: the upstream waits meanwhile.
      remote.pause();
      const pass = () => {
        client.write(chunk);
        setTimeout(() => remote.resume(), Math.ceil((chunk.length / bytesPerSecond) * 1000));
      };
      if (held) stalled.add(pass);
      else pass();
    });
    remote.on('end', () => client.end());
    const drop = () => {
      client.destroy();
      remote.destroy();
    };
    client.on('error', drop).on('close', drop);
    remote.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = `127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return {
    address,
    hold: () => {
      held = true;
    },
    release: () => {
      held = false;
      for (const pass of stalled) pass();
      stalled.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
