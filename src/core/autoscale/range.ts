import { FlagValueError } from '../flagError';

// How many of something a worker runs (requests in flight, local worker processes): a fixed number the user chose,
// or a range the autoscaler moves within. One type for both, so a caller cannot hold a range and forget to scale.

export type Scaled =
  | { readonly kind: 'fixed'; readonly n: number }
  | { readonly kind: 'auto'; readonly min: number; readonly max: number };

/** `--concurrency auto`: from a couple of requests to as many as the machine, the sites and the work allow. */
export const AUTO_CONCURRENCY = { min: 2, max: 64 } as const;

/** Where an autoscaled worker starts: the fixed default, known good on most sites, within the range. */
export const AUTO_CONCURRENCY_START = 16;

/** A plain number is a fixed one (the editor's settings, the API). */
export function asScaled(x: number | Scaled): Scaled {
  return typeof x === 'number' ? fixed(x) : x;
}

/** Whether a setting starts any worker: a range does, a fixed 0 does not. */
export function hasWorkers(w: number | Scaled): boolean {
  const s = asScaled(w);
  return s.kind === 'auto' || s.n > 0;
}

export function fixed(n: number): Scaled {
  return { kind: 'fixed', n };
}

/** The number to start with: the fixed one, or `start` brought into the range. */
export function initial(s: Scaled, start: number): number {
  return s.kind === 'fixed' ? s.n : Math.min(s.max, Math.max(s.min, start));
}

/** As a command-line value the parser reads back: `16`, `2..64`. */
export function formatScaled(x: number | Scaled): string {
  const s = asScaled(x);
  return s.kind === 'fixed' ? String(s.n) : `${s.min}..${s.max}`;
}

export class ScaleSpecError extends FlagValueError {
  constructor(flag: string, value: string, why: string) {
    super(flag, value, why);
    this.name = 'ScaleSpecError';
  }
}

/**
 * `N`, `auto` or `MIN..MAX` (`--concurrency`, `--workers`). `auto` is `autoRange`. A range whose ends are equal is
 * a fixed number: nothing to scale.
 */
export function parseScaled(
  value: string,
  flag: string,
  autoRange: { readonly min: number; readonly max: number },
): Scaled {
  const v = value.trim();
  if (v === 'auto') return { kind: 'auto', min: autoRange.min, max: autoRange.max };
  const range = /^(\d+)\s*\.\.\s*(\d+)$/.exec(v);
  if (range) return rangeOf(Number(range[1]), Number(range[2]), flag, value);
  return fixed(wholeAtLeastOne(v, flag, value));
}

/**
 * Celery's spelling, `--autoscale MAX,MIN` (max first, as `celery worker --autoscale=10,3`); `MAX` alone is `1..MAX`
 * as in Celery, where MIN defaults to 0 processes (a crawl worker keeps at least one request).
 */
export function parseCeleryAutoscale(value: string): Scaled {
  const parts = value.split(',').map((p) => p.trim());
  if (parts.length > 2)
    throw new ScaleSpecError('autoscale', value, 'give MAX,MIN (two whole numbers, the largest first, as Celery does)');
  const max = wholeAtLeastOne(parts[0]!, 'autoscale', value);
  const min = parts.length === 2 ? wholeAtLeastOne(parts[1]!, 'autoscale', value) : 1;
  if (min > max)
    throw new ScaleSpecError('autoscale', value, `MAX comes first (Celery's order): ${max} is less than ${min}`);
  return rangeOf(min, max, 'autoscale', value);
}

function rangeOf(min: number, max: number, flag: string, value: string): Scaled {
  if (!Number.isInteger(min) || min < 1)
    throw new ScaleSpecError(flag, value, 'the minimum must be a whole number of at least 1');
  if (max < min) throw new ScaleSpecError(flag, value, `the range is MIN..MAX: ${max} is less than ${min}`);
  return min === max ? fixed(min) : { kind: 'auto', min, max };
}

function wholeAtLeastOne(v: string, flag: string, value: string): number {
  const n = Number(v);
  if (v === '' || !Number.isInteger(n) || n < 1)
    throw new ScaleSpecError(flag, value, "expected a whole number of at least 1, 'auto', or MIN..MAX");
  return n;
}
