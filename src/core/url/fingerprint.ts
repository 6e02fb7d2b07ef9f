import { createHash } from 'node:crypto';

// A URL's identity for deduplication: the first 64 bits of SHA-1 of its canonical form. At one million URLs
// the chance that any two distinct URLs share a fingerprint is about n²/2⁶⁵ ≈ 3·10⁻⁸ (documented in the
// README); a collision would make one page look "already seen", so the figure is kept that small on purpose.

export function fingerprint(canonicalUrl: string): bigint {
  return createHash('sha1').update(canonicalUrl).digest().readBigUInt64BE(0);
}

export function fingerprintHex(canonicalUrl: string): string {
  return createHash('sha1').update(canonicalUrl).digest('hex').slice(0, 16);
}
