import type { RunChangeCounts } from './diff';
import type { NotifiedChange } from './notify';

// A task's changes as an Atom feed (RFC 4287), for people who follow sites in a feed reader: one entry per run
// (a digest, as the webhook's message), newest first. Pure: the monitor serves it (monitor/feed.ts).

export interface FeedInput {
  readonly task: string;
  /** The feed's own URL (its id and self link). */
  readonly selfUrl: string;
  /** Closed runs, any order. */
  readonly runs: readonly RunChangeCounts[];
  readonly changes: readonly (NotifiedChange & { readonly run: string })[];
}

/** Changes listed per entry; the counts cover all of them. */
const ENTRY_LIMIT = 200;

export function changesAtom(f: FeedInput): string {
  const runs = [...f.runs].sort((a, b) => b.finishedAt - a.finishedAt || (a.run < b.run ? 1 : -1));
  const updated = new Date(runs[0]?.finishedAt ?? 0).toISOString();
  const entries = runs.map((r) => {
    const mine = f.changes.filter((c) => c.run === r.run);
    const lines = mine.slice(0, ENTRY_LIMIT).map(changeLine);
    if (mine.length > ENTRY_LIMIT) lines.push(`… and ${mine.length - ENTRY_LIMIT} more (crawl-studio changes)`);
    return [
      '  <entry>',
      `    <id>${esc(`${f.selfUrl}#${r.run}`)}</id>`,
      `    <title>${esc(`${f.task}: ${r.added} added, ${r.changed} changed, ${r.removed} removed (run ${r.run})`)}</title>`,
      `    <updated>${new Date(r.finishedAt).toISOString()}</updated>`,
      `    <content type="text">${esc(lines.join('\n') || 'no change')}</content>`,
      '  </entry>',
    ].join('\n');
  });
  return [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<feed xmlns="http://www.w3.org/2005/Atom">',
    `  <id>${esc(f.selfUrl)}</id>`,
    `  <title>${esc(`Crawl Studio: changes of ${f.task}`)}</title>`,
    `  <updated>${updated}</updated>`,
    `  <link rel="self" href="${esc(f.selfUrl)}"/>`,
    '  <author><name>Crawl Studio</name></author>',
    ...entries,
    '</feed>',
    '',
  ].join('\n');
}

function changeLine(c: NotifiedChange): string {
  const show = (v: unknown) => (v === undefined ? '(none)' : JSON.stringify(v));
  if (c.kind === 'added') return `+ ${c.type} ${c.key}`;
  if (c.kind === 'removed') return `- ${c.type} ${c.key}`;
  return `~ ${c.type} ${c.key}: ${c.field}: ${show(c.old)} → ${show(c.new)}`;
}

/** XML text and attribute escaping; characters XML 1.0 forbids are dropped. */
function esc(s: string): string {
  return s
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}
