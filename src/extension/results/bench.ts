import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore, type ItemRow, type ItemStore } from '../../store';
import { PAGE_SIZE, EMPTY_VIEW, type ResultsViewState } from './protocol';
import { ResultsSource } from './source';

// Benchmark hook for the results view (no VS Code needed): how long until the first rows show, and how long a
// page takes while scrolling, on a store with many items — the host side of every webview request, measured
// through the same ResultsSource the panel uses. bench/ may call runResultsBenchmark().

export interface ScrollStats {
  readonly pages: number;
  readonly meanMs: number;
  readonly p95Ms: number;
  readonly maxMs: number;
}

export interface ResultsBenchmark {
  readonly items: number;
  /** Open the view: types, columns, count and the first page, unfiltered. */
  readonly firstRowsMs: number;
  /** Scrolling page by page from the top, and jumping to random offsets (scrollbar drags). */
  readonly scroll: ScrollStats;
  readonly jumps: ScrollStats;
  /** A text filter plus a sort on a data field: first answer (builds the in-memory index) and paging after. */
  readonly filteredFirstRowsMs: number;
  readonly filteredScroll: ScrollStats;
  readonly filteredMatches: number;
  /** Per-field empty/distinct over every item. */
  readonly qualityMs: number;
}

/** Fills a store with `n` book-like items (one field always empty, as a broken selector leaves it). */
export async function seedItems(store: ItemStore, n: number, batch = 5000): Promise<void> {
  for (let start = 0; start < n; start += batch) {
    const rows: ItemRow[] = [];
    for (let i = start; i < Math.min(n, start + batch); i++) {
      const data = {
        title: `Book ${i}: ${['a light', 'the dark', 'some long'][i % 3]} story`,
        price: ((i * 7919) % 10000) / 100,
        upc: `upc-${i}`,
        rating: ['One', 'Two', 'Three', 'Four', 'Five'][i % 5],
        availability: '',
      };
      rows.push({
        type: 'book',
        key: `upc-${i}`,
        json: JSON.stringify(data),
        fields: Object.keys(data),
        url: `http://127.0.0.1:8737/catalogue/book-${i}.html`,
        rule: 'book',
        run: 'bench',
        fetchedAt: 1_700_000_000_000 + i,
      });
    }
    await store.writeBatch([], rows, 'ignore');
  }
}

function stats(times: number[]): ScrollStats {
  const sorted = [...times].sort((a, b) => a - b);
  const mean = times.reduce((a, b) => a + b, 0) / Math.max(1, times.length);
  return {
    pages: times.length,
    meanMs: round(mean),
    p95Ms: round(sorted[Math.floor(sorted.length * 0.95)] ?? 0),
    maxMs: round(sorted[sorted.length - 1] ?? 0),
  };
}

const round = (x: number) => Math.round(x * 10) / 10;

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t = performance.now();
  const r = await fn();
  return [r, performance.now() - t];
}

/** Measures a store (already filled) through ResultsSource. */
export async function benchmarkResults(
  store: ItemStore,
  opts: { scrollPages?: number; jumps?: number } = {},
): Promise<ResultsBenchmark> {
  const src = new ResultsSource(store);
  const open = async (view: ResultsViewState) => {
    await src.setQuery(view);
    const { total } = await src.count();
    await src.rows(0, PAGE_SIZE);
    return total;
  };
  const [items, firstRowsMs] = await timed(async () => {
    const types = await src.types();
    await src.columns(types[0]!);
    return open({ ...EMPTY_VIEW, itemType: types[0]! });
  });
  const page = async (offsets: number[]) => {
    const times: number[] = [];
    for (const o of offsets) times.push((await timed(() => src.rows(o, PAGE_SIZE)))[1]);
    return stats(times);
  };
  const n = opts.scrollPages ?? 50;
  const scroll = await page(Array.from({ length: n }, (_, i) => i * PAGE_SIZE));
  const rnd = (total: number) =>
    Array.from({ length: opts.jumps ?? 20 }, (_, i) =>
      Math.floor((((i * 7919) % 1000) / 1000) * Math.max(0, total - PAGE_SIZE)),
    );
  const jumps = await page(rnd(items));
  const [filteredMatches, filteredFirstRowsMs] = await timed(() =>
    open({ ...EMPTY_VIEW, itemType: 'book', filters: { title: 'dark' }, sort: { field: 'price', descending: true } }),
  );
  const filteredScroll = await page([...Array.from({ length: n }, (_, i) => i * PAGE_SIZE), ...rnd(filteredMatches)]);
  const [, qualityMs] = await timed(() => src.fieldQuality());
  return {
    items,
    firstRowsMs: round(firstRowsMs),
    scroll,
    jumps,
    filteredFirstRowsMs: round(filteredFirstRowsMs),
    filteredScroll,
    filteredMatches,
    qualityMs: round(qualityMs),
  };
}

/** Seeds a throwaway SQLite store with `items` items (default 100,000) and measures it. */
export async function runResultsBenchmark(
  opts: { items?: number; dir?: string } = {},
): Promise<ResultsBenchmark & { seedMs: number }> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'cs-results-bench-'));
  const store = new SqliteStore(join(dir, 'bench.sqlite'));
  await store.open();
  try {
    const [, seedMs] = await timed(() => seedItems(store, opts.items ?? 100_000));
    return { ...(await benchmarkResults(store)), seedMs: round(seedMs) };
  } finally {
    await store.close();
    if (!opts.dir) rmSync(dir, { recursive: true, force: true });
  }
}
