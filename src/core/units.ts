// Durations and sizes as a person writes them in a task file ("10s", "5MB") or as plain numbers.

const DURATION = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/;
const DURATION_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

export function parseDuration(value: string | number): number {
  if (typeof value === 'number') return value;
  const m = DURATION.exec(value);
  if (!m) throw new Error(`'${value}' is not a duration`);
  return Math.round(Number(m[1]) * DURATION_MS[m[2] ?? 'ms']!);
}

const SIZE = /^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB)?\s*$/;
const SIZE_BYTES: Record<string, number> = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 };

export function parseSize(value: string | number): number {
  if (typeof value === 'number') return value;
  const m = SIZE.exec(value);
  if (!m) throw new Error(`'${value}' is not a size`);
  return Math.round(Number(m[1]) * SIZE_BYTES[m[2] ?? 'B']!);
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(2)} GB`;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s - m * 60)} s`;
}

/**
 * An integer with thousands separators, as `toLocaleString('en-US')` writes it ("12,345", "-1,000"), without
 * Intl: the first NumberFormat of a process loads ICU's locale data, 50 ms of a CLI's main thread while its crawl
 * starts. Anything but a safe integer is left to String().
 */
export function groupDigits(n: number): string {
  if (!Number.isSafeInteger(n)) return String(n);
  const digits = String(Math.abs(n));
  let out = '';
  for (let end = digits.length; end > 0; end -= 3)
    out = digits.slice(Math.max(0, end - 3), end) + (out ? `,${out}` : '');
  return n < 0 ? `-${out}` : out;
}
