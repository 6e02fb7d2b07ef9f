// Deterministic randomness for the fuzzers: every case has its own generator derived from (seed, case index), so
// any case, a hang included, can be regenerated from those two numbers alone.

export type Rng = () => number;

/** mulberry32: small, fast, good enough for test-input generation. */
export function rng(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function caseRng(seed: number, index: number): Rng {
  return rng(Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(index + 1, 0xc2b2ae35));
}

export const int = (r: Rng, lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));
export const pick = <T>(r: Rng, list: readonly T[]): T => list[Math.floor(r() * list.length)]!;
export const chance = (r: Rng, p: number): boolean => r() < p;

/** Picks by weight: [[weight, value], ...]. */
export function weighted<T>(r: Rng, table: readonly (readonly [number, T])[]): T {
  const total = table.reduce((s, [w]) => s + w, 0);
  let x = r() * total;
  for (const [w, v] of table) {
    x -= w;
    if (x < 0) return v;
  }
  return table[table.length - 1]![1];
}

/** Settings shared by the fuzzers; CI uses the defaults (fixed seed, bounded cases and time). */
export function fuzzSettings(name: string, defaults: { cases: number; budgetMs: number }) {
  const env = process.env;
  const upper = name.toUpperCase();
  return {
    seed: Number(env[`FUZZ_${upper}_SEED`] ?? env.FUZZ_SEED ?? 20261129),
    cases: Number(env[`FUZZ_${upper}_CASES`] ?? env.FUZZ_CASES ?? defaults.cases),
    budgetMs: Number(env[`FUZZ_${upper}_BUDGET_MS`] ?? env.FUZZ_BUDGET_MS ?? defaults.budgetMs),
    /** Most CPU time a single input may take before it counts as a hang (fuzz.test.ts: where it cannot be read, time). */
    perInputMs: Number(env.FUZZ_PER_INPUT_MS ?? 10_000),
  };
}
