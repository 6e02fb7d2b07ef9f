import { connect, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

// A SOCKS5 server for tests (RFC 1928, CONNECT only, with RFC 1929 username/password authentication when given
// credentials), on a free loopback port. It records the targets clients asked for, as they named them (a host name
// or an address), and the connections refused for bad credentials.

export interface SocksServer {
  readonly port: number;
  /** host:port of every CONNECT it carried out. */
  readonly targets: string[];
  /** Clients refused for wrong or missing credentials. */
  readonly refused: number;
  /** Local ports of its connections to targets: a target sees requests that came through it from these. */
  readonly upstreamPorts: ReadonlySet<number>;
  close(): Promise<void>;
}

/** Reads exactly n bytes from a socket, keeping what arrives beyond them for the next read. */
function reader(socket: Socket) {
  let buffered = Buffer.alloc(0);
  let wanted: { n: number; resolve: (b: Buffer) => void; reject: (e: Error) => void } | null = null;
  const pump = () => {
    if (wanted && buffered.length >= wanted.n) {
      const w = wanted;
      wanted = null;
      const out = buffered.subarray(0, w.n);
      buffered = buffered.subarray(w.n);
      w.resolve(Buffer.from(out));
    }
  };
  const onData = (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    pump();
  };
  socket.on('data', onData);
  socket.on('close', () => wanted?.reject(new Error('closed')));
  return {
    read: (n: number) =>
      new Promise<Buffer>((resolve, reject) => {
        wanted = { n, resolve, reject };
        pump();
      }),
    /** Stops reading; returns what was read ahead. */
    detach: () => {
      socket.off('data', onData);
      return buffered;
    },
  };
}

export async function startSocks5(credentials?: { user: string; password: string }): Promise<SocksServer> {
  const state = { targets: [] as string[], refused: 0, upstreamPorts: new Set<number>() };
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    void (async () => {
      const r = reader(client);
      const [ver, nMethods] = await r.read(2);
      if (ver !== 5) return client.destroy();
      const methods = [...(await r.read(nMethods!))];
      const method = credentials ? 0x02 : 0x00;
      if (!methods.includes(method)) {
        state.refused++;
        client.end(Buffer.from([5, 0xff]));
        return;
      }
      client.write(Buffer.from([5, method]));
      if (credentials) {
        const [, uLen] = await r.read(2);
        const user = (await r.read(uLen!)).toString();
        const [pLen] = await r.read(1);
        const password = (await r.read(pLen!)).toString();
        if (user !== credentials.user || password !== credentials.password) {
          state.refused++;
          client.end(Buffer.from([1, 1]));
          return;
        }
        client.write(Buffer.from([1, 0]));
      }
      const [, cmd, , atyp] = await r.read(4);
      let host: string;
      if (atyp === 1) host = [...(await r.read(4))].join('.');
      else if (atyp === 3) host = (await r.read((await r.read(1))[0]!)).toString();
      else if (atyp === 4) host = (await r.read(16)).toString('hex').match(/.{4}/g)!.join(':');
      else return client.destroy();
      const port = (await r.read(2)).readUInt16BE(0);
      if (cmd !== 1) {
        client.end(Buffer.from([5, 7, 0, 1, 0, 0, 0, 0, 0, 0]));
        return;
      }
      const upstream = connect(port, host, () => {
        state.targets.push(`${host}:${port}`);
        state.upstreamPorts.add(upstream.localPort!);
        client.write(Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
        const ahead = r.detach();
        if (ahead.length) upstream.write(ahead);
        client.pipe(upstream).pipe(client);
      });
      sockets.add(upstream);
      upstream.on('close', () => sockets.delete(upstream));
      upstream.on('error', () => {
        if (!client.destroyed) client.end(Buffer.from([5, 5, 0, 1, 0, 0, 0, 0, 0, 0]));
      });
    })().catch(() => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get targets() {
      return state.targets;
    },
    get refused() {
      return state.refused;
    },
    upstreamPorts: state.upstreamPorts,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
