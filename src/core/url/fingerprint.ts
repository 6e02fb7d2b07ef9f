import * as crypto from 'node:crypto';

// A URL's identity for deduplication: the first 64 bits of SHA-1 of its canonical form. At one million URLs
// the chance that any two distinct URLs share a fingerprint is about n²/2⁶⁵ ≈ 3·10⁻⁸ (documented in the
// README); a collision would make one page look "already seen", so the figure is kept that small on purpose.

// crypto.hash() (Node ≥ 20.12, so every runtime we support has it) hashes a string in one call, without a Hash
// object: a third of createHash's time per link. The fallback only keeps an older runtime working.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** The fingerprint as 16 hex digits (job ids, lookups). */
export function fingerprintHex(canonicalUrl: string): string {
  return (
    oneShot ? oneShot('sha1', canonicalUrl, 'hex') : crypto.createHash('sha1').update(canonicalUrl).digest('hex')
  ).slice(0, 16);
}

export function fingerprint(canonicalUrl: string): bigint {
  return BigInt(`0x${fingerprintHex(canonicalUrl)}`);
}
