// Item history's cost on the bench site's second run (issue 33: "history costs ≤ 10% more store time per item"):
// bench/src/micro-history.ts drives the store API with the bench site's items (a first run, then a re-crawl where
// most items are unchanged), once with history on and once off per round, the order alternating between rounds so
// a busy machine's drift falls on both; medians and spread per store. SQLite on disk (the task folder's default
// place, so every batch's commit syncs the WAL), PostgreSQL in a throwaway cluster (fsync off, as the test suite's).
// Run after `node bench/build.mjs`: `node bench/history.mjs [--rounds 9] [--lists 100] [--batch-items 500 | --pages N]
// [--second changed|same] [--no-postgres] [--no-sqlite] [--build DIR]`. `--second same`: the bench site as it is,
// unchanged between runs; `changed` (the default): 2% of its books change price, 1% stock, 1% go and as many come.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPostgres } from './lib/services.mjs';

const here = dirname(fileURLToPath(import.meta.url));
// --build DIR: another build's micro-history.js (bench/build.mjs --src COPY --out DIR), to compare two versions.
const build = process.argv.includes('--build')
  ? process.argv[process.argv.indexOf('--build') + 1]
  : join(here, '.build');
const flag = (name, dflt) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : dflt);
const ROUNDS = Number(flag('--rounds', '9'));
const LISTS = flag('--lists', '100');
// A batch as the writer makes it: up to the store's batchSize of items (micro-history's default), or `--pages N`
// records a batch (the bench's batches before 2026-12-05, seventh: 60).
const BATCH = process.argv.includes('--pages')
  ? ['--pages', flag('--pages')]
  : ['--batch-items', flag('--batch-items', '500')];
const SECOND = flag('--second', 'changed');
const tmp = join(here, 'results', 'tmp', `history-${Date.now().toString(36)}`);
mkdirSync(tmp, { recursive: true });

const stores = process.argv.includes('--no-sqlite') ? [] : [['sqlite', ['--sqlite', join(tmp, 'bench.sqlite')]]];
let pg = null;
if (!process.argv.includes('--no-postgres')) {
  try {
    pg = await startPostgres({ dir: join('/tmp', `cs-bench-hist-pg-${Date.now().toString(36)}`) });
    stores.push(['postgres', ['--postgres', pg.url]]);
  } catch (err) {
    console.error(`PostgreSQL skipped: ${err.message}`);
  }
}

let seq = 0;
const micro = (args, history, run, schema) =>
  JSON.parse(
    execFileSync(
      process.execPath,
      [
        join(build, 'micro-history.js'),
        ...args,
        '--history',
        history,
        '--lists',
        LISTS,
        ...BATCH,
        '--run',
        String(run),
        '--schema',
        schema,
        // Only when asked: an older build's micro-history (`--build`) knows no such option.
        ...(SECOND === 'changed' ? [] : ['--second', SECOND]),
      ],
      { encoding: 'utf8' },
    )
      .trim()
      .split('\n')
      .pop(),
  );
// The first run (untimed here), then the re-crawl in a process of its own, as a scheduled re-crawl is.
const once = (args, history) => {
  const schema = `hist_${++seq}`;
  micro(args, history, 1, schema);
  return micro(args, history, 2, schema);
};
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const fmt = (n, d = 1) => n.toFixed(d);

const load = [loadavg()[0]];
const rows = [];
for (const [kind, args] of stores) {
  const on = [];
  const off = [];
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? ['on', 'off'] : ['off', 'on'];
    for (const h of order) (h === 'on' ? on : off).push(once(args, h));
    load.push(loadavg()[0]);
  }
  // Per round, the ratio of the two runs taken back to back: less exposed to the machine's drift than two medians.
  const ratios = on.map((a, i) => a.usPerItem / off[i].usPerItem);
  const cpuRatios = on.map((a, i) => a.cpuUsPerItem / off[i].cpuUsPerItem);
  // The whole run: its batches, its end (the counts per type, the summary row and with history the run's close in
  // item history: removals and counts, once per run) and the close (SQLite's checkpoint of the WAL into the file),
  // charged to the items: what the run cost the store, wherever a checkpoint fell.
  const wholeRatios = on.map((a, i) => a.wholeUsPerItem / off[i].wholeUsPerItem);
  const spread = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
  const row = {
    store: kind,
    items: on[0].items,
    batches: on[0].batches,
    changes: on[0].changes,
    on: {
      us: median(on.map((x) => x.usPerItem)),
      whole: median(on.map((x) => x.wholeUsPerItem)),
      cpu: median(on.map((x) => x.cpuUsPerItem)),
      endMs: median(on.map((x) => x.endMs ?? 0)),
      closeMs: median(on.map((x) => x.closeMs)),
    },
    off: {
      us: median(off.map((x) => x.usPerItem)),
      whole: median(off.map((x) => x.wholeUsPerItem)),
      cpu: median(off.map((x) => x.cpuUsPerItem)),
      closeMs: median(off.map((x) => x.closeMs)),
      endMs: median(off.map((x) => x.endMs ?? 0)),
    },
    ratio: spread(ratios),
    whole: spread(wholeRatios),
    observeUs: median(on.map((x) => x.observeUsPerItem)),
    cpuRatio: spread(cpuRatios),
    raw: {
      on: on.map((x) => [x.usPerItem, x.wholeUsPerItem, x.cpuUsPerItem]),
      off: off.map((x) => [x.usPerItem, x.wholeUsPerItem, x.cpuUsPerItem]),
    },
  };
  rows.push(row);
  console.error(JSON.stringify(row));
}

const L = [];
L.push(
  `Second run: ${SECOND === 'same' ? 'the bench site unchanged' : '2% of books change price, 1% stock, 1% removed, 1% added'}. Rounds: ${ROUNDS} per store, batches of ${BATCH[0] === '--pages' ? `${BATCH[1]} pages` : `up to ${BATCH[1]} items`}, history on and off back to back (order alternating). Load average (1 min) from ${fmt(load[0])} to ${fmt(load.at(-1))}, range ${fmt(Math.min(...load))}–${fmt(Math.max(...load))}, on ${execFileSync('nproc').toString().trim()} cores.`,
);
L.push('');
L.push(
  "| store | items (2nd run) | batches | batches: store time per item, off → on (µs, median) | of it in history's step (µs) | batches: on/off (median, min–max) | run's end: counts, summary (on: and history's close), off → on (ms) | close, off → on (ms) | **whole run** (batches, end, close) per item, off → on (µs) | **whole run: on/off** (median of per-round ratios, min–max) | CPU of the batches: on/off |",
);
L.push('|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  const pct = (x) => `${x >= 1 ? '+' : ''}${fmt((x - 1) * 100, 0)}%`;
  const range = (x) => `${pct(x.median)} (${pct(x.min)} … ${pct(x.max)})`;
  L.push(
    `| ${r.store} | ${r.items} (${r.changes.added} added, ${r.changes.changed} changed, ${r.changes.removed} removed) | ${r.batches} | ${fmt(r.off.us)} → ${fmt(r.on.us)} | ${fmt(r.observeUs)}${r.store === 'postgres' ? ' (decisions only)' : ''} | ${range(r.ratio)} | ${fmt(r.off.endMs)} → ${fmt(r.on.endMs)} | ${fmt(r.off.closeMs)} → ${fmt(r.on.closeMs)} | ${fmt(r.off.whole)} → ${fmt(r.on.whole)} | **${range(r.whole)}** | ${range(r.cpuRatio)} |`,
  );
}
console.log(L.join('\n'));
await pg?.stop?.();
rmSync(tmp, { recursive: true, force: true });
process.exit(0);
