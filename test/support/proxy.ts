import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';

// A forward proxy on 127.0.0.1 for tests of `proxy:`: absolute-form HTTP requests and CONNECT tunnels, each with
// Basic Proxy-Authorization checked. Requests it forwards carry `x-test-proxy: 1`, so a site can tell which did not
// come through it.

export interface Proxy {
  port: number;
  server: Server;
  /** Requests (absolute-form URL, or CONNECT host:port) it forwarded. */
  forwarded: string[];
  refused: number;
}

/** A forward proxy: absolute-form HTTP requests and CONNECT tunnels, each with Basic Proxy-Authorization checked. */
export async function forwardProxy(user: string, password: string): Promise<Proxy> {
  const p = { forwarded: [] as string[], refused: 0 } as Proxy;
  const expected = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  p.server = createServer((req, res) => {
    if (req.headers['proxy-authorization'] !== expected) {
      p.refused++;
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="test"' });
      return res.end();
    }
    const target = new URL(req.url!);
    p.forwarded.push(target.href);
    const headers = { ...req.headers, 'x-test-proxy': '1' };
    delete headers['proxy-authorization'];
    const up = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: req.method,
        headers,
      },
      (upRes) => {
        res.writeHead(upRes.statusCode!, upRes.headers);
        upRes.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  p.server.on('connect', (req: IncomingMessage, socket, head) => {
    if (req.headers['proxy-authorization'] !== expected) {
      p.refused++;
      socket.end('HTTP/1.1 407 Proxy Authentication Required\r\n\r\n');
      return;
    }
    p.forwarded.push(`CONNECT ${req.url}`);
    const [host, port] = req.url!.split(':');
    const up = connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      up.write(head);
      up.pipe(socket).pipe(up);
    });
    up.on('error', () => socket.destroy());
    socket.on('error', () => up.destroy());
  });
  await new Promise<void>((r) => p.server.listen(0, '127.0.0.1', r));
  p.port = (p.server.address() as AddressInfo).port;
  return p;
}
