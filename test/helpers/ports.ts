import net from 'node:net';

/** A TCP port free on 127.0.0.1 now (the OS's pick), for a server a test starts itself. */
export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.listen(0, '127.0.0.1', resolve);
  });
  const { port } = s.address() as net.AddressInfo;
  await new Promise((resolve) => s.close(resolve));
  return port;
}
