// How the task parse's messages quote what the file says: values cut to a readable length, lists of names, the
// nearest name for a misspelling.

/** A value from the file, quoted and cut: a message stays readable however long the value is. */
export function quote(value: string, max = 80): string {
  return `'${value.length > max ? value.slice(0, max - 1) + '…' : value}'`;
}

export function listNames(names: readonly string[], max = 10): string {
  const shown = names.slice(0, max).map((n) => (n.length > 40 ? n.slice(0, 39) + '…' : n));
  return names.length > max ? `${shown.join(', ')}, … (${names.length} in all)` : shown.join(', ');
}

/** The reason part of a RegExp error, without the pattern it repeats. */
export function regexProblem(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  const reason = /: ([^:]+)$/.exec(msg)?.[1] ?? msg;
  return reason.length > 200 ? reason.slice(0, 199) + '…' : reason;
}

/**
 * The candidate nearest to `word`, if near enough. Bounded work: a file with thousands of names and broken
 * references must still validate at typing speed, so candidates whose length alone rules them out are skipped
 * and the search stops after about 50k character comparisons.
 */
export function closest(word: string, candidates: readonly string[]): string | null {
  let best: string | null = null;
  let bestDist = Math.max(2, Math.floor(word.length / 3)) + 1;
  let budget = 50_000;
  for (const c of candidates) {
    if (Math.abs(c.length - word.length) >= bestDist) continue;
    budget -= (word.length + 1) * (c.length + 1);
    if (budget < 0) break;
    const d = levenshtein(word.toLowerCase(), c.toLowerCase());
    if (d < bestDist) {
      best = c;
      bestDist = d;
    }
  }
  return best;
}

function levenshtein(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}
