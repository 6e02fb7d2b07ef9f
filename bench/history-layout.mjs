// Where item history's state lives, priced in WAL pages (issue 33): a count the machine's load cannot move, unlike
// bench/history.mjs's wall clock. One store is filled by the bench site's first run (micro-history, history on);
// copies of it then take a re-crawl's batches (35 batches of the same items in the same order, 3.5% of them changed,
// each batch one transaction) written by plain SQL in five layouts:
//   off       the item rows only (the store without history);
//   state     + a changed item's state row upserted in item_state and its change row (the store as it is);
//   stateOnly + the state row only (what the change rows cost, by difference);
//   inRow     the state as two columns of the item row (first run, removed run; the row's data is history's data),
//             written by the item's own UPDATE, + its change row: what the lever in results/2026-12-05-history-2.md
//             would cost;
//   columns   inRow's schema, no history writes: what the two columns cost every row.
// Prints WAL frames a batch (checkpoints off, so every page a commit writes is one frame) and CPU medians.
// Run after `node bench/build.mjs`: `node bench/history-layout.mjs [--rounds 5]`.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const ROUNDS = Number(process.argv.includes('--rounds') ? process.argv[process.argv.indexOf('--rounds') + 1] : '5');
const BATCHES = 35;
const CHANGED = 0.035;
const PAGE = 4096;
const tmp = join(here, 'results', 'tmp', `history-layout-${Date.now().toString(36)}`);
mkdirSync(tmp, { recursive: true });
const first = join(tmp, 'first.sqlite');
execFileSync(process.execPath, [
  join(here, '.build', 'micro-history.js'),
  ...['--sqlite', first, '--history', 'on', '--lists', '100', '--run', '1', '--schema', 'x'],
]);

const TABLES = [
  ['items_listing', 'listing'],
  ['items_book', 'book'],
];

function prepare(variant) {
  const file = join(tmp, `${variant}.sqlite`);
  for (const s of ['', '-wal', '-shm']) rmSync(file + s, { force: true });
  copyFileSync(first, file);
  const setup = new DatabaseSync(file);
  setup.exec('PRAGMA journal_mode = WAL');
  if (variant === 'inRow' || variant === 'columns') {
    for (const [t] of TABLES)
      setup.exec(`ALTER TABLE ${t} ADD COLUMN first_run text; ALTER TABLE ${t} ADD COLUMN removed_run text;
        UPDATE ${t} SET first_run = 'run-1'`);
    setup.exec('DROP TABLE item_state; VACUUM');
  }
  setup.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  setup.close();
  return file;
}

function recrawl(variant) {
  const file = prepare(variant);
  const db = new DatabaseSync(file);
  db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0');
  const set = 'data = ?, url = ?, run = ?, fetched_at = ?, updated_at = ?';
  const update = (t, extra = '') => db.prepare(`UPDATE ${t} SET ${set}${extra} WHERE key = ?`);
  const plain = Object.fromEntries(TABLES.map(([t]) => [t, update(t)]));
  const seen =
    variant === 'inRow'
      ? Object.fromEntries(
          TABLES.map(([t]) => [t, update(t, ", first_run = coalesce(first_run, 'run-2'), removed_run = NULL")]),
        )
      : plain;
  const state =
    variant === 'state' || variant === 'stateOnly'
      ? db.prepare(`INSERT INTO item_state (type, key, first_run, last_run, removed_run, data, url, fetched_at)
          VALUES (?, ?, 'run-1', 'run-2', NULL, ?, ?, ?) ON CONFLICT (type, key) DO UPDATE SET last_run = excluded.last_run,
          data = excluded.data, url = excluded.url, fetched_at = excluded.fetched_at`)
      : null;
  const change =
    variant === 'state' || variant === 'inRow'
      ? db.prepare(`INSERT INTO item_changes (run, type, key, kind, field, old_value, new_value, at)
          VALUES ('run-2', ?, ?, 'changed', 'price', '"1"', '"2"', ?) ON CONFLICT DO NOTHING`)
      : null;
  const items = TABLES.map(([t, type]) => [t, type, db.prepare(`SELECT key, data, url FROM ${t} ORDER BY id`).all()]);
  let seed = 7; // the same items change in every layout
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const per = Math.ceil(items[0][2].length / BATCHES);
  const c0 = process.cpuUsage();
  for (let b = 0; b < BATCHES; b++) {
    const at = 1e12 + b;
    db.exec('BEGIN IMMEDIATE');
    const changed = [];
    for (const [t, type, rows] of items)
      for (const r of rows.slice(b * per, (b + 1) * per)) {
        const differs = random() < CHANGED;
        // A new price, as most of the re-crawl's changes are (one character longer).
        const data = differs ? r.data.replace(/"price":"?[^,}]*/, (m) => `${m}1`) : r.data;
        (differs ? seen : plain)[t].run(data, r.url, 'run-2', at, at, r.key);
        if (differs) changed.push({ type, key: r.key, data, url: r.url, at });
      }
    // As history writes them: sorted by type and key.
    changed.sort((x, y) => (x.type + x.key < y.type + y.key ? -1 : 1));
    for (const c of changed) state?.run(c.type, c.key, c.data, c.url, c.at);
    for (const c of changed) change?.run(c.type, c.key, c.at);
    db.exec('COMMIT');
  }
  const cpu = process.cpuUsage(c0);
  // Before close: the last connection's close checkpoints and deletes the WAL.
  const frames = (statSync(`${file}-wal`).size - 32) / (PAGE + 24);
  db.close();
  return { frames, cpuMs: (cpu.user + cpu.system) / 1000 };
}

const VARIANTS = ['off', 'state', 'stateOnly', 'inRow', 'columns'];
const results = Object.fromEntries(VARIANTS.map((v) => [v, []]));
for (let r = 0; r < ROUNDS; r++)
  for (const v of r % 2 ? [...VARIANTS].reverse() : VARIANTS) results[v].push(recrawl(v));
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const off = results.off[0].frames;
console.log(`| layout | WAL pages a batch | vs off | CPU of the batches (ms, median of ${ROUNDS}) |`);
console.log('|---|---|---|---|');
for (const v of VARIANTS) {
  const frames = results[v][0].frames;
  const pct = `${frames >= off ? '+' : ''}${(((frames - off) / off) * 100).toFixed(0)}%`;
  console.log(
    `| ${v} | ${(frames / BATCHES).toFixed(1)} | ${pct} | ${median(results[v].map((x) => x.cpuMs)).toFixed(1)} |`,
  );
}
rmSync(tmp, { recursive: true, force: true });
