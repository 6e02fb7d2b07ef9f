import { rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { decodeEntry, mergeBatch, PostgresStore, SqliteStore, type ItemStore, type PageRecord } from '../../src/store';

// Item history's cost on a re-crawl (issue 33), driving the store API directly: the bench site's items (sitegen:
// LISTS list pages of 20 `listing` items, each listing's `book` page with one `book` item) stored by a first run,
// then a second run: `--second same`, the bench site as it is (it does not change between runs: its re-crawl sees
// every item again, unchanged), or `--second changed` (the default), where most items are unchanged but 2% of books
// change price, 1% change stock, 1% are gone and as many are new. In batches as the writer makes them (decodeEntry +
// mergeBatch, policy update): page records until their items reach the store's batchSize (500), as the writer reads
// them when entries arrive faster than its 200 ms flush (the bench crawl's writer logged a median batch of 500 items
// at 2,000 and 10,000 pages), or `--pages N` records a batch. Times every writeBatch of a run (wall, and this
// process's CPU: SQLite works in-process, PostgreSQL in its server), the run's end as the launcher makes it (the rows
// per type, the summary row and with history the run's close in item history) and the store's close (SQLite's WAL
// checkpoint). One run, one store, one history setting per process (`--run 1`, then `--run 2` on the same store):
// bench/history.mjs runs it with history on and off in interleaved rounds. Prints one JSON line.

const { values } = parseArgs({
  options: {
    sqlite: { type: 'string' },
    postgres: { type: 'string' },
    history: { type: 'string', default: 'on' },
    lists: { type: 'string', default: '100' },
    pages: { type: 'string' },
    'batch-items': { type: 'string', default: '500' },
    run: { type: 'string', default: '1' },
    second: { type: 'string', default: 'changed' },
    schema: { type: 'string', default: 'hist_bench' },
  },
});
const LISTS = Number(values.lists);
const PER = 20;
const PAGES_PER_BATCH = values.pages ? Number(values.pages) : null;
const BATCH_ITEMS = Number(values['batch-items']);
const history = values.history !== 'off';
const BASE = 'http://127.0.0.1:8080';
if (values.second !== 'changed' && values.second !== 'same') throw new Error('--second changed|same');
// The run whose content differs from the first: none when the second run sees the site as it was.
const CHANGED_RUN = values.second === 'changed' ? 2 : 0;

function book(id: number, run: number) {
  // Second run: ids ≡ 1 (mod 50) change price, ≡ 2 (mod 100) change stock.
  const price = 5 + (id % 50) + (run === CHANGED_RUN && id % 50 === 1 ? 0.5 : 0);
  const stock = (id % 20) + (run === CHANGED_RUN && id % 100 === 2 ? 3 : 0);
  return {
    title: `A Light in the Attic, volume ${id}`,
    price: price.toFixed(2),
    upc: `a${id.toString(16).padStart(15, '0')}`,
    in_stock: String(stock),
    tags: ['Poetry', 'Books', id % 3 === 0 ? 'Classics' : 'Travel'],
    cover: `${BASE}/media/cache/${id.toString(16).padStart(4, '0')}/cover-${id}.jpg`,
  };
}

/** The run's page records in crawl order: a list page, then its books. Run 2 drops ids ≡ 3 (mod 100), adds as many. */
function records(run: number): PageRecord[] {
  const out: PageRecord[] = [];
  let t = 1_700_000_000_000 + run * 10_000_000;
  const runId = `run-${run}`;
  for (let p = 1; p <= LISTS; p++) {
    const ids: number[] = [];
    for (let i = 0; i < PER; i++) {
      const id = (p - 1) * PER + i;
      if (run === CHANGED_RUN && id % 100 === 3) ids.push(1_000_000 + id);
      else ids.push(id);
    }
    const listings = ids.map((id) => {
      const b = book(id, run);
      return {
        type: 'listing',
        key: `${BASE}/catalogue/book-${id}.html`,
        data: { title: b.title, price: b.price, url: `${BASE}/catalogue/book-${id}.html` },
      };
    });
    const page = (url: string, rule: string, items: PageRecord['items']): PageRecord => ({
      task: 'bench',
      run: runId,
      url,
      rule,
      depth: 1,
      status: 200,
      fetchedAt: t++,
      contentType: 'text/html; charset=utf-8',
      bytes: 15_000,
      items,
      problems: [],
    });
    out.push(page(`${BASE}/catalogue/page-${p}.html`, 'list', listings));
    for (const id of ids)
      out.push(
        page(`${BASE}/catalogue/book-${id}.html`, 'book', [
          { type: 'book', key: String(book(id, run).upc), data: book(id, run) },
        ]),
      );
  }
  return out;
}

async function storeRun(
  store: ItemStore,
  run: number,
): Promise<{ wallMs: number; cpuMs: number; endMs: number; items: number; batches: number }> {
  const recs = records(run);
  let wallMs = 0;
  let cpuMs = 0;
  let items = 0;
  let batches = 0;
  for (let i = 0; i < recs.length;) {
    // The writer's read (streamWriter.ts collect): entries until their items reach batchSize.
    let end = i;
    if (PAGES_PER_BATCH) end = Math.min(recs.length, i + PAGES_PER_BATCH);
    else for (let n = 0; end < recs.length && n < BATCH_ITEMS; end++) n += Math.max(1, recs[end]!.items.length);
    // Decoding and merging are the writer's, not the store's: outside the timing.
    const entries = recs.slice(i, end).map((r, j) => decodeEntry(`${run}-${i + j}`, ['p', JSON.stringify(r)]));
    i = end;
    const m = mergeBatch(entries, 'update');
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await store.writeBatch(m.pages, m.items, 'update', m.errors);
    wallMs += performance.now() - t0;
    const c = process.cpuUsage(c0);
    cpuMs += (c.user + c.system) / 1000;
    items += m.items.length;
    batches++;
  }
  // The run's end as the run launcher makes it (storeAttachment.ts finalizeRun): the rows each type holds, then the
  // run's summary row, with history on in one transaction with the run's close in item history (endRun: the items it
  // removed, its counts). History off writes the summary alone, as if the launcher skipped history's close.
  const e0 = performance.now();
  let stored = 0;
  for (const type of await store.itemTypes()) stored += await store.count(type);
  const summary = {
    run: `run-${run}`,
    task: 'bench',
    startedAt: 0,
    finishedAt: Date.now(),
    durationMs: 1,
    pages: recs.length,
    items: stored,
    duplicates: 0,
    conflicts: 0,
    failures: 0,
  };
  if (history) await store.endRun(summary, { complete: true, retention: { runs: 30 } });
  else await store.writeRunSummary(summary);
  return { wallMs, cpuMs, endMs: performance.now() - e0, items, batches };
}

async function main(): Promise<void> {
  // Each run is a process of its own, as a re-crawl is: run 1 starts from an empty store, run 2 re-crawls it.
  const runNo = Number(values.run);
  const schema = values.schema!;
  if (!values.sqlite && !values.postgres) throw new Error('--sqlite PATH or --postgres URL');
  if (values.sqlite && runNo === 1)
    for (const ext of ['', '-wal', '-shm']) rmSync(values.sqlite + ext, { force: true });
  const store: ItemStore = values.sqlite
    ? new SqliteStore(values.sqlite, { history })
    : new PostgresStore(values.postgres!, { schema, history });
  await store.open();
  // How much of the store's time is item history's own step: its decisions, and (SQLite) the change rows' writes
  // inside writeBatch's transaction; the state's reads and writes are parts of the item rows' own statements, and
  // PostgreSQL's change rows ride on the batch's page statement. Wall time only: a CPU reading here (a getrusage
  // call each) cost more than the step itself, and history off never pays it. Whichever of the steps this build's
  // history has (`--build` of an older version: observe and writes) are timed.
  let observeMs = 0;
  let observed = 0;
  const log = store.history as unknown as Record<string, unknown>;
  for (const name of ['decide', 'recordChanges', 'observe', 'writes']) {
    const fn = log[name];
    if (typeof fn !== 'function') continue;
    const bound = (fn as (...a: unknown[]) => unknown).bind(log);
    log[name] = (...args: unknown[]) => {
      if (name !== 'recordChanges') observed += (args[0] as unknown[]).length;
      const t0 = performance.now();
      const done = () => (observeMs += performance.now() - t0);
      const out = bound(...args);
      if (out instanceof Promise) return out.finally(done);
      done();
      return out;
    };
  }
  const out = await storeRun(store, runNo);
  const changes = history ? (await store.history.runs('bench')).at(-1) : null;
  // Closing is part of what the run cost the store: SQLite's last connection checkpoints the WAL into the file
  // there. Without it a run whose pages cross the WAL's 1,000-page checkpoint would pay for a checkpoint that a run
  // just under it leaves to the close (PostgreSQL's close only ends the pool).
  const c0 = performance.now();
  await store.close();
  const closeMs = performance.now() - c0;
  console.log(
    JSON.stringify({
      store: store.kind,
      history,
      run: runNo,
      ...out,
      observed,
      closeMs,
      wholeUsPerItem: ((out.wallMs + out.endMs + closeMs) * 1000) / out.items,
      observeUsPerItem: (observeMs * 1000) / out.items,
      usPerItem: (out.wallMs * 1000) / out.items,
      cpuUsPerItem: (out.cpuMs * 1000) / out.items,
      changes,
    }),
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
