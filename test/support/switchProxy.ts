import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

// A TCP endpoint whose target can be switched, as a managed Redis's primary endpoint (a DNS name) moves to the new
// primary at a failover: connections made before the switch stay with the old node, new ones reach the new one.

export interface SwitchProxy {
  readonly port: number;
  readonly url: string;
  /** New connections go to `port` from now on; open ones are left as they are. */
  switchTo(port: number): void;
  close(): Promise<void>;
}

export async function switchProxy(initialPort: number): Promise<SwitchProxy> {
  let target = initialPort;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    switchTo(p) {
      target = p;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
