import type { Redis } from '../redis/connect';
import { fingerprintHex } from '../core/url/fingerprint';
import { partitionKeys } from '../frontier/keys';
import { partitionOfUrl } from '../frontier/layout';
import { readLayout } from '../frontier/partitions';
import { decodePage, encodePage, pageIdOf, type FrontierPage } from '../frontier/record';
import { withScripts } from '../frontier/scripts';

// What the views show of the compact frontier (frontier/pageFlow.ts, lua/frontier.lua): the pages waiting there, not
// BullMQ jobs yet, counted, listed in about the order they will go (best band first, hosts by their schedule, each
// host's oldest first), and found by URL, over every partition of the task (frontier/layout.ts). Reads only.

/** The frontier keys of each of the task's partitions. */
async function frontiers(redis: Redis, task: string) {
  const layout = await readLayout(redis, task);
  return { layout, keys: layout.tags.map((tag) => partitionKeys(task, tag).frontier) };
}

export interface FrontierCounts {
  /** Pages waiting in the frontier. */
  readonly waiting: number;
  /** Pages taken from it and not finished (the window: mostly BullMQ jobs, a few on their way). */
  readonly inWindow: number;
  /** Priority bands that hold waiting pages, best first. */
  readonly bands: readonly string[];
}

export interface FrontierRow extends FrontierPage {
  readonly host: string;
  /** The page's priority band (its priority; 1000 without one). */
  readonly band: string;
  /** A stable id for a view's row: its deduplication key's fingerprint (and force stamp), as its job id will end. */
  readonly id: string;
}

/** Hosts read per round trip while listing. */
const HOSTS_PER_READ = 200;

/**
 * Up to `count` waiting pages from the `start`-th, in about the order the window takes them. Skipping to a far
 * `start` reads the lengths of the lists before it (one command per host); views page through the first few hundred.
 */
export async function listFrontier(redis: Redis, task: string, start: number, count: number): Promise<FrontierRow[]> {
  const out: FrontierRow[] = [];
  let skip = start;
  // Partition by partition (a cluster's), each in the order its window takes them.
  for (const f of (await frontiers(redis, task)).keys) {
    for (const band of await redis.zrange(f.bands, 0, -1)) {
      for (let h = 0; out.length < count; h += HOSTS_PER_READ) {
        const hosts = await redis.zrange(f.ready(band), h, h + HOSTS_PER_READ - 1);
        if (hosts.length === 0) break;
        const lengths = await Promise.all(hosts.map((host) => redis.llen(f.queue(band, host))));
        for (let i = 0; i < hosts.length && out.length < count; i++) {
          if (skip >= lengths[i]!) {
            skip -= lengths[i]!;
            continue;
          }
          const records = await redis.lrange(f.queue(band, hosts[i]!), skip, skip + (count - out.length) - 1);
          skip = 0;
          for (const rec of records) out.push(row(hosts[i]!, band, rec));
        }
      }
      if (out.length >= count) return out;
    }
  }
  return out;
}

function row(host: string, band: string, record: string): FrontierRow {
  const page = decodePage(host, record);
  return { ...page, host, band, id: pageIdOf(page) };
}

export type FrontierWhere =
  | {
      readonly place: 'frontier';
      readonly band: string;
      readonly host: string;
      readonly ahead: number;
      readonly row: FrontierRow;
    }
  | { readonly place: 'window'; readonly row: FrontierRow };

/** Slice of a list looked at per script call (findPage.lua). */
const FIND_SLICE = 5_000;

/**
 * Where the canonical `url` waits in the task's frontier: in its host's list of a band (with how many of the host's
 * pages go before it), or taken into the window with its job still on its way. Null when neither.
 */
export async function findInFrontier(redis: Redis, task: string, url: string): Promise<FrontierWhere | null> {
  const { layout, keys } = await frontiers(redis, task);
  const f = keys[partitionOfUrl(layout, url)]!;
  let host: string;
  try {
    host = new URL(url).host;
  } catch {
    return null;
  }
  const inWindow = await redis.hget(f.transit, fingerprintHex(url));
  if (inWindow) {
    const [band, h, ...rest] = inWindow.split(' ');
    return { place: 'window', row: row(h!, band!, rest.join(' ')) };
  }
  const { record } = encodePage({ url, rule: '', depth: 0 }, host);
  const tail = record.slice(record.lastIndexOf(' '));
  const scripts = withScripts(redis);
  for (const band of await redis.zrange(f.bands, 0, -1)) {
    const list = f.queue(band, host);
    const length = await redis.llen(list);
    for (let from = 0; from < length; from += FIND_SLICE) {
      const [at, rec] = await scripts.csFindPage(list, tail, record[0]!, from, FIND_SLICE);
      if (at >= 0) return { place: 'frontier', band, host, ahead: at, row: row(host, band, rec) };
    }
  }
  return null;
}

export interface FrontierHost {
  readonly host: string;
  readonly band: string;
  /** Pages of the host waiting in the band. */
  readonly waiting: number;
  /** When the task may next take one of its pages (ms since epoch; Redis's clock). Parked hosts are past 1e14. */
  readonly nextAt: number;
}

export interface FrontierByHost {
  /** Hosts with waiting pages, counted once per band they wait in (a task without priorities has one band). */
  readonly hosts: number;
  /** The first `limit` of them in the order the window takes them: best band first, soonest first. */
  readonly first: readonly FrontierHost[];
}

/**
 * The frontier by host, bounded: how many hosts have waiting pages, and the first `limit` with their waiting
 * counts. One ZCARD per band and partition plus one LLEN per listed host, whatever the frontier's size.
 */
export async function readFrontierByHost(redis: Redis, task: string, limit: number): Promise<FrontierByHost> {
  let hosts = 0;
  const first: FrontierHost[] = [];
  for (const f of (await frontiers(redis, task)).keys) {
    for (const band of await redis.zrange(f.bands, 0, -1)) {
      hosts += await redis.zcard(f.ready(band));
      if (first.length >= limit) continue;
      const flat = await redis.zrange(f.ready(band), 0, limit - first.length - 1, 'WITHSCORES');
      const listed: { host: string; nextAt: number }[] = [];
      for (let i = 0; i < flat.length; i += 2) listed.push({ host: flat[i]!, nextAt: Number(flat[i + 1]) });
      const lengths = await Promise.all(listed.map((h) => redis.llen(f.queue(band, h.host))));
      listed.forEach((h, i) => first.push({ host: h.host, band, waiting: lengths[i]!, nextAt: h.nextAt }));
    }
  }
  return { hosts, first };
}
