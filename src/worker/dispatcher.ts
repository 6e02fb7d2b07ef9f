import { lookup as systemLookup } from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import type { Agent as AgentType, Dispatcher } from 'undici';
import { isPrivateAddress } from '../core/url/hosts';
// From undici's own modules, not its entry: index.js evaluates every API undici has (WebSocket, caches, mocks,
// fetch…), about 230 KB of the extension's bundle and a tenth of its load time, for the two pieces used here.
// The version is pinned in package.json; test/integration/fetcher*.test.ts fail if these paths move. Their types:
// undici.d.ts.
import Agent from 'undici/lib/dispatcher/agent.js';
import ProxyAgent from 'undici/lib/dispatcher/proxy-agent.js';
import DispatcherClass from 'undici/lib/dispatcher/dispatcher.js';
import apiConnect from 'undici/lib/api/api-connect.js';
import apiRequest from 'undici/lib/api/api-request.js';

// The connection pools the fetcher sends requests through. The guarded pool checks the addresses a host resolves
// to inside the socket's own DNS lookup, so the address that is checked is the address that is connected to: a
// check before the request followed by a second, independent lookup in fetch would let a DNS server answer with
// a public address the first time and 127.0.0.1 the second (DNS rebinding).

// A CONNECT tunnel (ProxyAgent, https targets) calls dispatcher.connect(), which undici's entry module adds to the
// Dispatcher prototype with its other APIs; only that one is added here.
DispatcherClass.prototype.connect ??= apiConnect;

/**
 * undici's own SOCKS5 dispatcher (no dependency added): it sends the target's name to the proxy, which resolves it
 * (socks5h semantics), and wraps https targets in TLS end to end. Loaded on the first SOCKS proxy only; undici marks it
 * experimental with a process warning, which would land in every worker's log, so that one warning is kept quiet.
 */
async function socksAgent(proxyUrl: string): Promise<Dispatcher> {
  const { default: Socks5ProxyAgent } = await import('undici/lib/dispatcher/socks5-proxy-agent.js');
  // undici knows the scheme as socks5: (or socks:); socks5h: says the same thing (names resolved by the proxy).
  return withoutSocksWarning(() => new Socks5ProxyAgent(proxyUrl.replace(/^socks5h:/i, 'socks5:')));
}

/** `make`'s result, its "SOCKS5 proxy support is experimental" process warning left out (others pass). */
function withoutSocksWarning<T>(make: () => T): T {
  const own = Object.getOwnPropertyDescriptor(process, 'emitWarning');
  const emit = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = (warning: string | Error, ...rest: unknown[]) => {
    if (/SOCKS5 proxy support is experimental/.test(String(typeof warning === 'string' ? warning : warning?.message)))
      return;
    emit(warning, ...rest);
  };
  try {
    return make();
  } finally {
    // Put back as it was: Node's own function, an own property of process.
    if (own) Object.defineProperty(process, 'emitWarning', own);
  }
}

/** Whether a proxy URL is a SOCKS5 proxy's (socks5://, socks5h://). */
function isSocksProxy(proxyUrl: string): boolean {
  return /^socks5h?:/i.test(proxyUrl);
}

/** A request (GET unless told) through `dispatcher`: undici's request() without its entry module. */
export function requestVia(
  dispatcher: Dispatcher,
  url: string,
  opts: {
    headers: Record<string, string>;
    signal: AbortSignal;
    method?: 'GET' | 'POST' | 'PUT' | 'PATCH';
    body?: string;
  },
): Promise<Dispatcher.ResponseData> {
  const u = new URL(url);
  return apiRequest.call(dispatcher, {
    origin: u.origin,
    path: `${u.pathname}${u.search}`,
    method: opts.method ?? 'GET',
    headers: opts.headers,
    body: opts.body,
    signal: opts.signal,
  });
}

export interface ProxyPools {
  /** http:// targets: requests in absolute form, as HTTP proxies expect (a SOCKS proxy: its tunnel). */
  readonly plain: Dispatcher;
  /** https:// targets: a CONNECT tunnel, TLS end to end with the target (a SOCKS proxy: the same). */
  readonly tunnel: Dispatcher;
}

const proxies = new Map<string, ProxyPools>();

/**
 * The pools for one proxy URL (http, https or socks5; credentials included, expanded by the caller), made once so
 * connections to the proxy are kept alive. The proxy resolves the target's name, so the caller checks the target's addresses first
 * (fetcher.ts); the proxy's own address is the user's choice and is not checked.
 */
export async function proxyPools(proxyUrl: string): Promise<ProxyPools> {
  const known = proxies.get(proxyUrl);
  if (known) return known;
  let p: ProxyPools;
  if (isSocksProxy(proxyUrl)) {
    const socks = await socksAgent(proxyUrl);
    // Two first requests through a SOCKS proxy may both have made an agent while its module loaded: one is kept.
    const first = proxies.get(proxyUrl);
    if (first) {
      void socks.close().catch(() => undefined);
      return first;
    }
    p = { plain: socks, tunnel: socks };
  } else {
    p = {
      plain: new ProxyAgent({ uri: proxyUrl, proxyTunnel: false }),
      tunnel: new ProxyAgent({ uri: proxyUrl, proxyTunnel: true }),
    };
  }
  proxies.set(proxyUrl, p);
  return p;
}

/** Resolves a host name to every address it has; tests inject their own to stand in for DNS. */
export type Resolver = (hostname: string) => Promise<readonly LookupAddress[]>;

export const systemResolver: Resolver = (hostname) => systemLookup(hostname, { all: true });

/** The cause a connection fails with when a host resolves to a private address. */
export class PrivateAddressError extends Error {
  readonly code = 'ECRAWL_PRIVATE_ADDRESS';
  constructor(
    readonly hostname: string,
    readonly address: string,
  ) {
    super(`${hostname} resolves to the private address ${address}`);
    this.name = 'PrivateAddressError';
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `net.connect` lookup through `resolve`. Guarded, it refuses a host if any of its addresses is private: picking
 * the public ones would still let a hostile DNS server choose which one the socket uses.
 */
export function lookupVia(resolve: Resolver, guarded: boolean) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    resolve(hostname).then(
      (addresses) => {
        const bad = guarded ? addresses.find((a) => isPrivateAddress(a.address)) : undefined;
        if (bad) return callback(new PrivateAddressError(hostname, bad.address), '');
        if (addresses.length === 0)
          return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '');
        if (options.all) return callback(null, [...addresses]);
        callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}

export interface Pools {
  /** For hosts that must not be private. */
  readonly guarded: AgentType;
  /** For hosts the task allows to be private: its start hosts, or all of them with scope.allowPrivate. */
  readonly open: AgentType;
}

const pools = new WeakMap<Resolver, Pools>();

/** The pools for one resolver, made once so keep-alive connections are reused from page to page. */
export function poolsFor(resolve: Resolver = systemResolver): Pools {
  let p = pools.get(resolve);
  if (!p) {
    p = {
      guarded: new Agent({ connect: { lookup: lookupVia(resolve, true) } }),
      // The system resolver is net.connect's own default; a test's stand-in DNS answers for both pools.
      open: new Agent(resolve === systemResolver ? {} : { connect: { lookup: lookupVia(resolve, false) } }),
    };
    pools.set(resolve, p);
  }
  return p;
}
