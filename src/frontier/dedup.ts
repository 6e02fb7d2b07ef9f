import { fingerprint } from '../core/url/fingerprint';

// Where a URL's fingerprint lives in Redis. The 64-bit fingerprint is split into a bucket (its top bits, part of
// the key name) and a member (its low 63 bits as a decimal integer). Redis stores small sets of integers as
// "intsets": 8 bytes per member, no per-entry overhead. Buckets are sized so each holds a few hundred members,
// under Redis's set-max-intset-entries (512 by default); a bucket past that still works, it just costs more.

const MIN_BUCKET_BITS = 4;
const MAX_BUCKET_BITS = 20;
const TARGET_PER_BUCKET = 256;

/** Bucket bits for an expected number of URLs (the task's maxPages, or a default of about a million). */
export function bucketBitsFor(expectedUrls: number | null): number {
  const n = expectedUrls ?? 1_000_000;
  const bits = Math.ceil(Math.log2(Math.max(1, n / TARGET_PER_BUCKET)));
  return Math.min(MAX_BUCKET_BITS, Math.max(MIN_BUCKET_BITS, bits));
}

const LOW_63 = (1n << 63n) - 1n;

export function seenSlot(canonicalUrl: string, bucketBits: number): { bucket: number; member: string } {
  const fp = fingerprint(canonicalUrl);
  return { bucket: Number(fp >> BigInt(64 - bucketBits)), member: (fp & LOW_63).toString() };
}
