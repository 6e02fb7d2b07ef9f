import { isIP } from 'node:net';

// Whether an address is loopback, private, link-local or otherwise not on the public Internet. A crawl may only
// reach such hosts when the task allows it (or when they are a start URL's host): page content must not be able
// to steer workers into the user's network. And a URL's host, the one parse of it every per-host count shares.

export function isPrivateAddress(address: string): boolean {
  const a = address.replace(/^\[|\]$/g, '').toLowerCase();
  const kind = isIP(a);
  if (kind === 4) return isPrivateV4(a);
  if (kind === 6) return isPrivateV6(a);
  return false;
}

function isPrivateV4(a: string): boolean {
  const [x, y] = a.split('.').map(Number) as [number, number];
  return (
    x === 0 ||
    x === 10 ||
    x === 127 ||
    (x === 100 && y >= 64 && y <= 127) ||
    (x === 169 && y === 254) ||
    (x === 172 && y >= 16 && y <= 31) ||
    (x === 192 && y === 168) ||
    (x === 198 && (y === 18 || y === 19)) ||
    x >= 224
  );
}

/**
 * IPv6, checked on the parsed address rather than its spelling: WHATWG URL writes an IPv4-mapped address as
 * `[::ffff:7f00:1]`, never `[::ffff:127.0.0.1]`, and the operating system connects it to 127.0.0.1. Addresses
 * that embed an IPv4 address the network may route to it (mapped, compatible, NAT64, 6to4) are judged by that
 * IPv4 address.
 */
function isPrivateV6(a: string): boolean {
  const g = parseV6(a);
  if (!g) return true; // isIP accepted it but we cannot read it: refuse rather than guess
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zero(0, 5) && g[5] === 0xffff) return isPrivateV4(v4(g[6]!, g[7]!)); // ::ffff:a.b.c.d, mapped
  if (zero(0, 6)) return true; // ::, ::1, and the deprecated IPv4-compatible ::a.b.c.d
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) return isPrivateV4(v4(g[6]!, g[7]!)); // ::ffff:0:a.b.c.d, translated
  if (g[0] === 0x64 && g[1] === 0xff9b && (zero(2, 6) || g[2] === 1)) return isPrivateV4(v4(g[6]!, g[7]!)); // NAT64
  if (g[0] === 0x2002) return isPrivateV4(v4(g[1]!, g[2]!)); // 6to4
  if (g[0] === 0x100 && zero(1, 4)) return true; // 100::/64, discard-only
  const top = g[0]!;
  return (
    (top & 0xfe00) === 0xfc00 || // fc00::/7 unique local
    (top & 0xffc0) === 0xfe80 || // fe80::/10 link-local
    (top & 0xffc0) === 0xfec0 || // fec0::/10 site-local (deprecated, still routed on some networks)
    (top & 0xff00) === 0xff00 // ff00::/8 multicast
  );
}

/** Eight 16-bit groups of a valid IPv6 address (as accepted by net.isIP), or null. */
function parseV6(a: string): number[] | null {
  let s = a.replace(/%.*$/, ''); // zone id
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (dotted) {
    const b = dotted.slice(1).map(Number);
    s = s.slice(0, dotted.index) + `${((b[0]! << 8) | b[1]!).toString(16)}:${((b[2]! << 8) | b[3]!).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const parts = (h: string) => (h === '' ? [] : h.split(':').map((x) => parseInt(x, 16)));
  const head = parts(halves[0]!);
  const tail = halves.length === 2 ? parts(halves[1]!) : [];
  const fill = 8 - head.length - tail.length;
  if ((halves.length === 2 && fill < 0) || (halves.length === 1 && fill !== 0)) return null;
  const out = [...head, ...Array<number>(Math.max(0, fill)).fill(0), ...tail];
  return out.length === 8 && out.every((x) => Number.isInteger(x) && x >= 0 && x <= 0xffff) ? out : null;
}

/** Host names that always mean this machine, whatever DNS says. */
export function isLocalHostname(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost') || isPrivateAddress(h);
}

/** The host (with its port) of an absolute URL, or null when it is not one: the key of per-host tallies. */
export function hostOf(url: string): string | null {
  try {
    return new URL(url).host;
  } catch {
    return null;
  }
}
