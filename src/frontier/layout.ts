import calculateSlot from 'cluster-key-slot';
import { isCluster, type Redis } from '../redis/connect';
import { fingerprintHex } from '../core/url/fingerprint';

// How a task's per-page state is spread over Redis (issue 19). A task's keys carry a hash tag, and all the keys a
// Lua script touches must share one: on a Redis Cluster a tag is one slot on one node. The task's own keys (its run's
// meta, lease, events, sessions, metric history) keep the tag `{task}`. The per-page state (the seen set, the
// compact frontier and its window, the BullMQ queue of the window's jobs, the run's counters, the items stream)
// is split into partitions by URL fingerprint, each under a tag of its own: `{task}` for the first partition (so a
// single node keeps today's key names exactly), `{task.N}` for the others, chosen so that each primary of a cluster
// holds one partition. A page's whole life (discovered, queued, taken into the window, finished, counted, stored)
// then happens in its partition's slot, each Lua call touching one slot, and the nodes share the work.

export interface TaskLayout {
  readonly task: string;
  /** The partitions' hash tags; the first is the task's name. */
  readonly tags: readonly string[];
}

export function singleLayout(task: string): TaskLayout {
  return { task, tags: [task] };
}

/** The partition of a page, by its fingerprint (16 hex digits): bits the seen set's buckets do not use. */
function partitionOf(layout: TaskLayout, fpHex: string): number {
  const n = layout.tags.length;
  return n === 1 ? 0 : parseInt(fpHex.slice(10, 16), 16) % n;
}

/** The partition of a page by its deduplication key (core/request/build.ts requestKey: a GET's canonical URL). */
export function partitionOfUrl(layout: TaskLayout, canonicalUrl: string): number {
  return layout.tags.length === 1 ? 0 : partitionOf(layout, fingerprintHex(canonicalUrl));
}

/** The partition of a job by its id ("<run>.<fingerprint>[.<stamp>]"); 0 for a job not of a page (the scheduler's). */
export function partitionOfJob(layout: TaskLayout, jobId: string): number {
  const fp = /^[^.]+\.([0-9a-f]{16})(?:\.|$)/.exec(jobId)?.[1];
  return fp ? partitionOf(layout, fp) : 0;
}

/** The field of the run's meta hash that records its layout (absent: one partition). */
export const LAYOUT_FIELD = 'parts';

export function layoutFromMeta(task: string, parts: string | null | undefined): TaskLayout {
  const tags = (parts ?? '').split(',').filter(Boolean);
  return tags.length > 0 && tags[0] === task ? { task, tags } : singleLayout(task);
}

export function layoutToMeta(layout: TaskLayout): string {
  return layout.tags.join(',');
}

/**
 * The layout a new run of `task` gets on this Redis: one partition on a single node; on a cluster one per primary,
 * each tag picked so its slot is served by a different primary (`{task}` where it falls, `{task.N}` with the smallest
 * N landing on each other one). The same topology always gives the same tags.
 */
export async function layoutFor(redis: Redis, task: string): Promise<TaskLayout> {
  if (!isCluster(redis)) return singleLayout(task);
  const ranges = (await redis.cluster('SLOTS')) as unknown as [
    number,
    number,
    [string, number, ...unknown[]],
    ...unknown[],
  ][];
  const ownerOf = (slot: number) => {
    const r = ranges.find(([a, b]) => slot >= a && slot <= b);
    return r ? `${r[2][0]}:${r[2][1]}` : '';
  };
  const owners = [...new Set(ranges.map((r) => `${r[2][0]}:${r[2][1]}`))].sort();
  if (owners.length <= 1) return singleLayout(task);
  const tags = [task];
  const taken = new Set([ownerOf(calculateSlot(task))]);
  for (let n = 1; taken.size < owners.length && n < 100_000; n++) {
    const tag = `${task}.${n}`;
    const owner = ownerOf(calculateSlot(tag));
    if (owner && !taken.has(owner)) {
      taken.add(owner);
      tags.push(tag);
    }
  }
  return { task, tags };
}
