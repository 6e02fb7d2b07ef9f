import { isIP } from 'node:net';

// Whether an address is loopback, private, link-local or otherwise not on the public Internet. A crawl may only
// reach such hosts when the task allows it (or when they are a start URL's host): page content must not be able
// to steer workers into the user's network.

export function isPrivateAddress(address: string): boolean {
  const a = address.replace(/^\[|\]$/g, '').toLowerCase();
  const kind = isIP(a);
  if (kind === 4) return isPrivateV4(a);
  if (kind === 6) {
    if (a === '::1' || a === '::') return true;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
    if (mapped) return isPrivateV4(mapped[1]!);
    return /^(fc|fd|fe8|fe9|fea|feb)/.test(a);
  }
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

/** Host names that always mean this machine, whatever DNS says. */
export function isLocalHostname(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost') || isPrivateAddress(h);
}
