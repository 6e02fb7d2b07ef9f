import type { DatabaseSync } from 'node:sqlite';
import { historySchema, itemHistoryColumns, stateFromItemStateSql } from './history/log';
import { quoteIdent } from './tables';
import { text } from './rows';
import { all, get } from './sqliteDriver';

// The SQLite store's schema: its tables, their versions and migrations, and the check that a file is a Crawl
// Studio store before anything is written to it.

/**
 * 2: pages are requests (method and body columns, one row per run, URL, method and body).
 * 3: page_validators (conditional re-crawl): added by BASE_SCHEMA, nothing else changes.
 * 4: item history's state in the item rows (history/log.ts), item_state moved into them and dropped.
 */
const SCHEMA_VERSION = 4;

const same = (column: string) => column;

/** History's columns of an SQLite item table: data as text, times as ms, like the row's own. */
const HISTORY_COLUMNS = itemHistoryColumns('TEXT', 'INTEGER');

/**
 * Version 3 to 4, in the caller's transaction: every item table gets history's columns (ALTER TABLE ADD COLUMN
 * changes the schema only, no row is rewritten), and the state item_state kept is copied into the rows.
 */
function migrateStateIntoRows(db: DatabaseSync): void {
  const hasState = all(db, `SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'item_state'`).length > 0;
  for (const r of all(db, 'SELECT type, table_name FROM item_types ORDER BY type')) {
    const t = quoteIdent(text(r.table_name));
    const have = new Set(all(db, `PRAGMA table_info(${t})`).map((c) => text(c.name)));
    for (const [name, type] of HISTORY_COLUMNS)
      if (!have.has(name)) db.exec(`ALTER TABLE ${t} ADD COLUMN ${name} ${type}`);
    if (hasState)
      db.prepare(stateFromItemStateSql(t, 'item_state', { rowMs: same, data: same, time: same })).run(text(r.type));
  }
  if (hasState) db.exec('DROP TABLE item_state');
}

/** Version 1 to 2, in the caller's transaction: a store's page rows were one per URL, GETs all. */
function migrateToRequests(db: DatabaseSync): void {
  db.exec(`ALTER TABLE pages ADD COLUMN method TEXT NOT NULL DEFAULT 'GET';
ALTER TABLE pages ADD COLUMN body TEXT NOT NULL DEFAULT '';
DROP INDEX IF EXISTS pages_run_url;`);
}

/**
 * `PRAGMA application_id` of a Crawl Studio store ("CSTD"), set when the schema is created: a file that carries
 * another id, or none while holding another application's tables, is refused untouched instead of being given
 * our tables and user_version. (Stores made before the id existed are recognised by their tables and adopted.)
 */
const SQLITE_APPLICATION_ID = 0x43535444;

/** The tables every Crawl Studio store has had since version 1. */
const BASE_TABLES = ['item_types', 'pages', 'errors', 'runs'];

const BASE_SCHEMA = `
CREATE TABLE IF NOT EXISTS item_types (
  type TEXT PRIMARY KEY,
  table_name TEXT NOT NULL UNIQUE,
  fields TEXT NOT NULL DEFAULT '[]',
  created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS pages (
  id INTEGER PRIMARY KEY,
  run TEXT NOT NULL,
  url TEXT NOT NULL,
  rule TEXT,
  depth INTEGER,
  status INTEGER,
  fetched_at INTEGER NOT NULL,
  content_type TEXT,
  bytes INTEGER NOT NULL DEFAULT 0,
  method TEXT NOT NULL DEFAULT 'GET',
  body TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX IF NOT EXISTS pages_run_request ON pages (run, url, method, body);
CREATE TABLE IF NOT EXISTS errors (
  id INTEGER PRIMARY KEY,
  error_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  run TEXT,
  url TEXT,
  rule TEXT,
  type TEXT,
  key TEXT,
  message TEXT NOT NULL,
  at INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS errors_error_id ON errors (error_id);
CREATE TABLE IF NOT EXISTS runs (
  run TEXT PRIMARY KEY,
  task TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  finished_at INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL,
  pages INTEGER NOT NULL,
  items INTEGER NOT NULL,
  duplicates INTEGER NOT NULL,
  conflicts INTEGER NOT NULL,
  failures INTEGER NOT NULL,
  extra TEXT
);
CREATE TABLE IF NOT EXISTS page_validators (
  url TEXT PRIMARY KEY,
  final_url TEXT NOT NULL,
  etag TEXT,
  last_modified TEXT,
  shape TEXT NOT NULL,
  items INTEGER NOT NULL DEFAULT 0,
  links BLOB,
  run TEXT NOT NULL,
  fetched_at INTEGER NOT NULL
);
`;

// `data` is declared TEXT, not JSON: SQLite gives an unknown type name NUMERIC affinity, which would turn
// a stored '12' into the integer 12. Times are integer ms since epoch, the unit everything else in the engine
// uses. `id` keeps insertion order for paging and exports.
export function itemTableSchema(table: string): string {
  const t = quoteIdent(table);
  return `
CREATE TABLE IF NOT EXISTS ${t} (
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL,
  data TEXT NOT NULL,
  url TEXT,
  rule TEXT,
  run TEXT,
  fetched_at INTEGER NOT NULL,
  first_seen INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  ${HISTORY_COLUMNS.map(([name, type]) => `${name} ${type}`).join(',\n  ')}
);
CREATE UNIQUE INDEX IF NOT EXISTS ${quoteIdent(`${table}_key`)} ON ${t} (key);`;
}

/** Throws, naming the file, unless it is new, empty, or a Crawl Studio store. Reads only. */
function checkOwnership(db: DatabaseSync, path: string): void {
  const id = Number(get(db, 'PRAGMA application_id')?.application_id ?? 0) >>> 0;
  if (id === SQLITE_APPLICATION_ID) return;
  const names = all(
    db,
    `SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name`,
  ).map((r) => text(r.name));
  const version = Number(get(db, 'PRAGMA user_version')?.user_version ?? 0);
  if (id === 0 && names.length === 0 && version === 0) return; // a new or empty file
  // Made by a Crawl Studio from before application_id: our tables, one of our schema versions.
  if (id === 0 && version >= 1 && version <= SCHEMA_VERSION && BASE_TABLES.every((t) => names.includes(t))) return;
  const what =
    id !== 0
      ? `its application_id is 0x${id.toString(16).padStart(8, '0')}, not Crawl Studio's (0x${SQLITE_APPLICATION_ID.toString(16)})`
      : `it already holds ${names.length ? `tables of another application (${names.slice(0, 5).join(', ')}${names.length > 5 ? ', …' : ''})` : `user_version ${version}`}`;
  throw new Error(
    `SQLite store ${path} is not a Crawl Studio store: ${what}. Nothing was written to it; ` +
      'point store.url at a new file (e.g. sqlite:.crawl/<task>.sqlite)',
  );
}

/**
 * Makes a just-opened file a current Crawl Studio store (ownership checked first, WAL asked for, migrated, tables
 * created) in one write transaction; returns the journal mode SQLite accepted.
 */
export function prepareDatabase(db: DatabaseSync, path: string): string {
  db.exec('PRAGMA busy_timeout = 0');
  // Before anything that could write (the journal mode, the schema): someone else's database stays as it was.
  checkOwnership(db, path);
  // WAL: other SQLite tools read while we write, and see whole batches only. Where the file system cannot
  // share memory between processes (some network mounts) SQLite keeps its rollback journal; the standard
  // locks still keep every process safe there, readers just wait for a batch to commit.
  const journalMode = text(get(db, 'PRAGMA journal_mode = WAL')?.journal_mode ?? 'unknown');
  const version = Number(get(db, 'PRAGMA user_version')?.user_version ?? 0);
  if (version > SCHEMA_VERSION) {
    throw new Error(
      `SQLite store ${path} has schema version ${version}, newer than this Crawl Studio understands (${SCHEMA_VERSION}): update the extension`,
    );
  }
  db.exec('BEGIN IMMEDIATE');
  try {
    if (version >= 1 && version < 2) migrateToRequests(db);
    db.exec(BASE_SCHEMA);
    if (version >= 1 && version < 4) migrateStateIntoRows(db);
    db.exec(historySchema('', { clustered: true }));
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
    db.exec(`PRAGMA application_id = ${SQLITE_APPLICATION_ID}`);
    db.exec('COMMIT');
  } catch (err) {
    if (db.isTransaction) db.exec('ROLLBACK');
    throw err;
  }
  return journalMode;
}
