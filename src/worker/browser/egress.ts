import { randomBytes } from 'node:crypto';
import {
  Agent as HttpAgent,
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { isPrivateAddress } from '../../core/url/hosts';
import { redactUrl } from '../../core/url/redact';
import { lookupVia, systemResolver, type Resolver } from '../dispatcher';

// Every request a rendered page makes leaves the browser through this forward proxy, in the worker's own process,
// on 127.0.0.1. Two reasons, one mechanism:
//  - The address guard holds on every hop. Chromium follows redirects itself, and Playwright's request routing sees
//    only the first request of a redirect chain, so a public page redirecting (302) to 169.254.169.254 was never
//    checked. Here each connection resolves its host through the fetcher's own guarded lookup (dispatcher.ts
//    lookupVia): the address checked is the address connected to, whatever the hop, the frame or the scheme
//    (https and WebSockets come as CONNECT).
//  - The session's proxy (`proxy:`) is chained from here, with its credentials: they stay in this process's memory,
//    never reach Chromium, its command line or the DevTools pipe.
// Each browser context gets a lease (for as long as the context lives, across its pages): a random token Chromium sends as its proxy user name (Playwright answers the
// proxy's 407 with it), naming which hosts may be private and which upstream proxy to use. A request without a live
// token is refused, so no other local process can use the worker's proxy credentials through this port.

export interface EgressRoute {
  /** Hosts (host:port) that may resolve to private addresses: the task's start hosts, or every host when null. */
  readonly privateAllowed: readonly string[] | null;
  /** The upstream proxy's URL, credentials expanded (never in a message: redactUrl). */
  readonly proxy?: string;
  /** DNS for direct connections; the system's by default (tests stand in their own). */
  readonly resolver?: Resolver;
}

/** One context's way out: the proxy settings to give Playwright, and what was refused on its behalf. */
export interface EgressLease {
  readonly proxy: { readonly server: string; readonly username: string; readonly password: string };
  /** Targets refused because they resolve to private addresses (host:port), in order. */
  readonly refused: readonly string[];
  /** The upstream proxy failed (unreachable, or refused its credentials): what, without credentials. */
  readonly proxyFailure: string | null;
  /** The upstream proxy's status when it answered with an error (407: it refused its credentials). */
  readonly proxyStatus: number | null;
  /** Targets (host:port) that could not be reached, with the error code (ENOTFOUND, ECONNREFUSED…). */
  readonly unreachable: ReadonlyMap<string, string>;
  /** Forgets what was refused or failed: the context's next page starts afresh (render.ts keeps contexts). */
  reset(): void;
  release(): void;
}

interface LeaseState {
  readonly route: EgressRoute;
  readonly refused: string[];
  proxyFailure: string | null;
  proxyStatus: number | null;
  readonly unreachable: Map<string, string>;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-connection',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

export class Egress {
  private readonly leases = new Map<string, LeaseState>();
  private readonly sockets = new Set<Duplex>();
  // Keep-alive pools for plain-http targets, per resolver (tests stand in their own DNS) and guard setting.
  private readonly agents = new Map<Resolver, { guarded: HttpAgent; open: HttpAgent }>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(): Promise<Egress> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const port = (server.address() as { port: number }).port;
    const egress = new Egress(server, port);
    server.on('request', (req, res) => egress.forward(req, res));
    server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => egress.tunnel(req, socket, head));
    server.on('connection', (s: Socket) => {
      egress.sockets.add(s);
      s.once('close', () => egress.sockets.delete(s));
    });
    // Chromium keeps proxy connections open between pages; they must not hold the worker open when it stops.
    server.unref();
    return egress;
  }

  lease(route: EgressRoute): EgressLease {
    const token = randomBytes(12).toString('hex');
    const state: LeaseState = { route, refused: [], proxyFailure: null, proxyStatus: null, unreachable: new Map() };
    this.leases.set(token, state);
    return {
      proxy: { server: `http://127.0.0.1:${this.port}`, username: token, password: 'x' },
      refused: state.refused,
      unreachable: state.unreachable,
      get proxyFailure() {
        return state.proxyFailure;
      },
      get proxyStatus() {
        return state.proxyStatus;
      },
      reset: () => {
        state.refused.length = 0;
        state.unreachable.clear();
        state.proxyFailure = null;
        state.proxyStatus = null;
      },
      release: () => void this.leases.delete(token),
    };
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    for (const a of this.agents.values()) {
      a.guarded.destroy();
      a.open.destroy();
    }
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  /** The lease a request names, or null after answering 407 (Chromium then retries with the token). */
  private leaseOf(req: IncomingMessage): LeaseState | null {
    const auth = req.headers['proxy-authorization'];
    const m = auth ? /^Basic\s+(\S+)/i.exec(auth) : null;
    const user = m ? Buffer.from(m[1]!, 'base64').toString('latin1').split(':')[0]! : '';
    return this.leases.get(user) ?? null;
  }

  /** An absolute-form request for an http:// target. */
  private forward(req: IncomingMessage, res: ServerResponse): void {
    const lease = this.leaseOf(req);
    if (!lease) {
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="crawl-studio"', connection: 'close' }).end();
      return;
    }
    let target: URL;
    try {
      target = new URL(req.url ?? '');
      if (target.protocol !== 'http:') throw new Error('not http');
    } catch {
      res.writeHead(400).end();
      return;
    }
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) headers[k] = v;
    void this.check(lease, target.host, target.hostname).then((refusal) => {
      if (refusal) {
        res.writeHead(403, { 'content-type': 'text/plain' }).end(refusal);
        req.resume();
        return;
      }
      const { route } = lease;
      const upstream = route.proxy ? new URL(route.proxy) : null;
      const opts = upstream
        ? {
            host: upstream.hostname.replace(/^\[|\]$/g, ''),
            port: Number(upstream.port) || (upstream.protocol === 'https:' ? 443 : 80),
            path: target.href,
            method: req.method,
            headers: { ...headers, ...proxyAuthorization(upstream) },
          }
        : {
            host: target.hostname.replace(/^\[|\]$/g, ''),
            port: Number(target.port) || 80,
            path: `${target.pathname}${target.search}`,
            method: req.method,
            headers,
            agent: this.agent(lease, target.host),
          };
      const send = upstream?.protocol === 'https:' ? httpsRequest : httpRequest;
      const out = send(opts, (up) => {
        if (upstream && up.statusCode === 407) refusedCredentials(lease, upstream);
        const raw: string[] = [];
        for (let i = 0; i < up.rawHeaders.length; i += 2) {
          if (!HOP_BY_HOP.has(up.rawHeaders[i]!.toLowerCase())) raw.push(up.rawHeaders[i]!, up.rawHeaders[i + 1]!);
        }
        res.writeHead(up.statusCode ?? 502, up.statusMessage, raw);
        up.pipe(res);
        up.on('error', () => res.destroy());
      });
      out.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'ECRAWL_PRIVATE_ADDRESS') lease.refused.push(target.host);
        else if (upstream) lease.proxyFailure = `proxy ${redactUrl(upstream.origin)}: ${err.code ?? err.message}`;
        else lease.unreachable.set(target.host, err.code ?? err.message);
        if (!res.headersSent) res.writeHead(err.code === 'ECRAWL_PRIVATE_ADDRESS' ? 403 : 502).end();
        else res.destroy();
      });
      // The page gave up on it (closed, or its render ended): nothing more is fetched for it.
      res.on('close', () => {
        if (!res.writableFinished) out.destroy();
      });
      req.pipe(out);
    });
  }

  /** CONNECT host:port, for https:// and wss:// targets: a tunnel, TLS end to end between Chromium and the target. */
  private tunnel(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => undefined);
    const lease = this.leaseOf(req);
    if (!lease) {
      socket.end(
        'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="crawl-studio"\r\nContent-Length: 0\r\n\r\n',
      );
      return;
    }
    const hostPort = req.url ?? '';
    const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(hostPort);
    if (!m) {
      socket.end('HTTP/1.1 400 Bad Request\r\n\r\n');
      return;
    }
    const hostname = m[1]!.replace(/^\[|\]$/g, '');
    const port = Number(m[2]);
    const refuse = (status: string) => socket.end(`HTTP/1.1 ${status}\r\nContent-Length: 0\r\n\r\n`);
    const joined = (up: Duplex, upHead?: Buffer) => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) up.write(head);
      if (upHead?.length) socket.write(upHead);
      up.pipe(socket).pipe(up);
      up.on('error', () => socket.destroy());
      socket.on('close', () => up.destroy());
      this.sockets.add(up);
      up.once('close', () => this.sockets.delete(up));
    };
    void this.check(lease, hostPort, hostname).then((refusal) => {
      if (refusal) return refuse('403 Forbidden');
      const { route } = lease;
      if (route.proxy) {
        const upstream = new URL(route.proxy);
        const send = upstream.protocol === 'https:' ? httpsRequest : httpRequest;
        const out = send({
          host: upstream.hostname.replace(/^\[|\]$/g, ''),
          port: Number(upstream.port) || (upstream.protocol === 'https:' ? 443 : 80),
          method: 'CONNECT',
          path: hostPort,
          headers: { host: hostPort, ...proxyAuthorization(upstream) },
        });
        out.on('connect', (res, up, upHead) => {
          if (res.statusCode === 200) return joined(up, upHead);
          if (res.statusCode === 407) refusedCredentials(lease, upstream);
          up.destroy();
          refuse('502 Bad Gateway');
        });
        out.on('error', (err: NodeJS.ErrnoException) => {
          lease.proxyFailure = `proxy ${redactUrl(upstream.origin)}: ${err.code ?? err.message}`;
          refuse('502 Bad Gateway');
        });
        out.end();
        return;
      }
      const up = connect({
        host: hostname,
        port,
        lookup: lookupVia(route.resolver ?? systemResolver, !this.open(lease, hostPort)),
      });
      up.once('connect', () => joined(up));
      up.once('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'ECRAWL_PRIVATE_ADDRESS') {
          lease.refused.push(hostPort);
          return refuse('403 Forbidden');
        }
        lease.unreachable.set(hostPort, err.code ?? err.message);
        refuse('502 Bad Gateway');
      });
    });
  }

  /** Whether `host` (host:port) may be private for this lease. */
  private open(lease: LeaseState, host: string): boolean {
    const allowed = lease.route.privateAllowed;
    return allowed === null || allowed.includes(host);
  }

  /**
   * The checks that can be made before connecting, as the fetcher makes them: an IP literal is never looked up, so
   * it is checked here; through an upstream proxy (which resolves the name itself) the name is resolved here first.
   * A name reached directly is checked inside the connection's own lookup (lookupVia). Null: go on.
   */
  private async check(lease: LeaseState, host: string, hostname: string): Promise<string | null> {
    if (this.open(lease, host)) return null;
    const literal = hostname.replace(/^\[|\]$/g, '');
    let addresses: string[] = [];
    if (isIP(literal)) addresses = [literal];
    else if (lease.route.proxy)
      addresses = (await (lease.route.resolver ?? systemResolver)(literal).catch(() => [])).map((a) => a.address);
    if (addresses.some((a) => isPrivateAddress(a))) {
      lease.refused.push(host);
      return `${host} resolves to a private address`;
    }
    return null;
  }

  private agent(lease: LeaseState, host: string): HttpAgent {
    const resolver = lease.route.resolver ?? systemResolver;
    let pair = this.agents.get(resolver);
    if (!pair) {
      pair = {
        guarded: new HttpAgent({ keepAlive: true, lookup: lookupVia(resolver, true) }),
        open: new HttpAgent({ keepAlive: true, lookup: lookupVia(resolver, false) }),
      };
      this.agents.set(resolver, pair);
    }
    return this.open(lease, host) ? pair.open : pair.guarded;
  }
}

function proxyAuthorization(proxy: URL): Record<string, string> {
  if (!proxy.username && !proxy.password) return {};
  const pair = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  return { 'proxy-authorization': `Basic ${Buffer.from(pair).toString('base64')}` };
}

/** The upstream proxy answered 407: its credentials are wrong (a mistake in the task's setup, not a passing failure). */
function refusedCredentials(lease: LeaseState, upstream: URL): void {
  lease.proxyFailure = `proxy ${redactUrl(upstream.origin)} refused its credentials (HTTP 407)`;
  lease.proxyStatus = 407;
}
