// Item history's cost on the bench site's second run (issue 33: "history costs ≤ 10% more store time per item"):
// bench/src/micro-history.ts drives the store API with the bench site's items (a first run, then a re-crawl where
// most items are unchanged), once with history on and once off per round, the order alternating between rounds so
// a busy machine's drift falls on both; medians and spread per store. SQLite on disk (the task folder's default
// place, so every batch's commit syncs the WAL), PostgreSQL in a throwaway cluster (fsync off, as the test suite's).
// Run after `node bench/build.mjs`: `node bench/history.mjs [--rounds 9] [--lists 100] [--no-postgres] [--no-sqlite]`.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPostgres } from './lib/services.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const build = join(here, '.build');
const flag = (name, dflt) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : dflt);
const ROUNDS = Number(flag('--rounds', '9'));
const LISTS = flag('--lists', '100');
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
        '--run',
        String(run),
        '--schema',
        schema,
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
  // finishRun (once per run: removals, counts, and the unchanged items' last run copied over) charged to the items.
  const withFinish = on.map((a, i) => (a.wallMs + a.finishMs) / (off[i].wallMs + off[i].finishMs));
  const row = {
    store: kind,
    items: on[0].items,
    batches: on[0].batches,
    changes: on[0].changes,
    on: {
      us: median(on.map((x) => x.usPerItem)),
      cpu: median(on.map((x) => x.cpuUsPerItem)),
      finishMs: median(on.map((x) => x.finishMs)),
    },
    off: { us: median(off.map((x) => x.usPerItem)), cpu: median(off.map((x) => x.cpuUsPerItem)) },
    ratio: { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) },
    withFinish: { median: median(withFinish), min: Math.min(...withFinish), max: Math.max(...withFinish) },
    observeUs: median(on.map((x) => x.observeUsPerItem)),
    cpuRatio: { median: median(cpuRatios), min: Math.min(...cpuRatios), max: Math.max(...cpuRatios) },
    raw: { on: on.map((x) => [x.usPerItem, x.cpuUsPerItem]), off: off.map((x) => [x.usPerItem, x.cpuUsPerItem]) },
  };
  rows.push(row);
  console.error(JSON.stringify(row));
}

const L = [];
L.push(
  `Rounds: ${ROUNDS} per store, history on and off back to back (order alternating). Load average (1 min) from ${fmt(load[0])} to ${fmt(load.at(-1))}, range ${fmt(Math.min(...load))}–${fmt(Math.max(...load))}, on ${execFileSync('nproc').toString().trim()} cores.`,
);
L.push('');
L.push(
  "| store | items (2nd run) | batches | store time per item, history off → on (µs, median) | of it in history's step (µs) | history costs (median of per-round on/off, min–max) | CPU per item of the process, off → on (µs) | CPU: on/off (median, min–max) | finishRun (ms) | with finishRun: on/off (median, min–max) |",
);
L.push('|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  const pct = (x) => `${x >= 1 ? '+' : ''}${fmt((x - 1) * 100, 0)}%`;
  L.push(
    `| ${r.store} | ${r.items} (${r.changes.added} added, ${r.changes.changed} changed, ${r.changes.removed} removed) | ${r.batches} | ${fmt(r.off.us)} → ${fmt(r.on.us)} | ${fmt(r.observeUs)}${r.store === 'postgres' ? ' (decisions only)' : ''} | **${pct(r.ratio.median)}** (${pct(r.ratio.min)} … ${pct(r.ratio.max)}) | ${fmt(r.off.cpu)} → ${fmt(r.on.cpu)} | ${pct(r.cpuRatio.median)} (${pct(r.cpuRatio.min)} … ${pct(r.cpuRatio.max)}) | ${fmt(r.on.finishMs)} | ${pct(r.withFinish.median)} (${pct(r.withFinish.min)} … ${pct(r.withFinish.max)}) |`,
  );
}
console.log(L.join('\n'));
await pg?.stop?.();
rmSync(tmp, { recursive: true, force: true });
process.exit(0);
