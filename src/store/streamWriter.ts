import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Redis } from '../redis/connect';
import { nodeFor } from '../redis/nodes';
import { taskKeys } from '../frontier/keys';
import { STORE_GROUP, writerBeatKey } from '../frontier/storeWriters';
import { withScripts } from '../frontier/scripts';
import { backoffDelay } from './backoff';
import { PAGE_FIELD } from './buffer';
import { decodeEntry, DEFAULT_LIMITS, mergeBatch, type DecodedEntry, type MergeLimits } from './merge';
import { StoreDataError, type ConflictPolicy, type ErrorRow, type ItemRow, type WriteResult } from './types';
import { isRedisFull, REDIS_FULL_MARK } from '../redis/memory';
import type { WriterCounters, WriterHandle, WriterOptions } from './writerTypes';

// The writer drains a task's items stream into a store. Its guarantees come from one ordering rule: an entry is
// acknowledged and deleted (XACK + XDEL, one script) only after the transaction holding its rows has committed. Killed
// before the commit, the rows roll back; killed after it, the entries are still pending and get written again,
// which changes nothing because every row has a unique key and is written with ON CONFLICT. Either way each
// item is stored once.
//
// Entries a writer read but never acknowledged stay in its consumer's pending list. Each writer keeps a
// heartbeat key alive; when one disappears (its process died), any other writer — or the same task's next
// writer — claims the dead consumer's entries at once instead of waiting for a long idle time. XAUTOCLAIM with
// a generous min-idle is the safety net for writers that hang while their heartbeat still runs.

interface RawEntry {
  readonly id: string;
  readonly fields: string[] | null;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

export function defaultConsumer(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/** The heartbeat key of a writer: in the stream's hash slot (the task's own stream by default), under its name. */
function writerHeartbeatKey(task: string, consumer: string, stream = taskKeys(task).items): string {
  return writerBeatKey(stream, consumer);
}

export class StreamWriter implements WriterHandle {
  readonly consumer: string;
  private readonly key: string;
  private readonly group: string;
  private readonly policy: ConflictPolicy;
  private readonly batchSize: number;
  private readonly flushMs: number;
  private readonly heartbeatMs: number;
  private readonly idleReadMs: number;
  private readonly claimIdleMs: number;
  private readonly recoverEveryMs: number;
  private readonly limits: MergeLimits;
  private readonly blocking: Redis;
  private readonly c: Mutable<WriterCounters>;
  private totalBatchMs = 0;
  private itemsPerEntry = 10;
  private stopping = false;
  private stopped = false;
  private hurry = 0;
  private nextRecoverAt = 0;
  private heartbeat: NodeJS.Timeout | null = null;
  private loop: Promise<void> = Promise.resolve();
  private wakeSleep: (() => void) | null = null;
  /** The loop is sleeping to let a batch gather (flush() may cut that short, not a backoff). */
  private gathering = false;
  /** flush() calls waiting for the next batch to be stored and acknowledged. */
  private readonly onAcked = new Set<() => void>();
  private blockingId: number | null = null;
  private reading = false;
  private died: string | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly opts: WriterOptions,
    /** The items stream this writer drains. */
    stream: string,
  ) {
    this.consumer = opts.consumer ?? defaultConsumer();
    this.key = stream;
    this.group = opts.group ?? STORE_GROUP;
    this.policy = opts.policy ?? 'ignore';
    this.batchSize = Math.max(1, opts.batchSize ?? 500);
    this.flushMs = Math.max(1, opts.flushMs ?? 200);
    this.heartbeatMs = Math.max(50, opts.heartbeatMs ?? 2_000);
    this.idleReadMs = Math.min(Math.max(50, opts.idleReadMs ?? 500), this.heartbeatMs);
    this.claimIdleMs = Math.max(1_000, opts.claimIdleMs ?? 60_000);
    this.recoverEveryMs = opts.recoverEveryMs ?? this.heartbeatMs;
    this.limits = { ...DEFAULT_LIMITS, ...opts.limits };
    // XREADGROUP BLOCK occupies its connection: give it its own, so the caller's connection stays free.
    this.blocking = redis.duplicate();
    this.blocking.on('error', () => undefined);
    // Its id lets stop() end a blocked read at once (CLIENT UNBLOCK) instead of waiting out the BLOCK timeout,
    // which was most of the time a finished crawl took to exit. A reconnect is a new client with a new id.
    // Forgotten as soon as the connection closes: after a server restart the old id may name another client.
    // On a cluster the id is the one of the connection to the node serving the stream, and UNBLOCK goes there too.
    // Learnt before a blocking read (learnBlockingId), on the same connection: asked on 'ready' instead, CLIENT ID
    // could queue behind a read sent first, so a stop() during that read found no id and waited out its BLOCK
    // (a loaded machine's fresh-clone run timed out on it).
    this.blocking.on('close', () => (this.blockingId = null));
    this.c = {
      task: opts.task,
      consumer: this.consumer,
      received: 0,
      duplicates: 0,
      conflicts: 0,
      written: 0,
      inserted: 0,
      updated: 0,
      pages: 0,
      errors: 0,
      batches: 0,
      lastBatchMs: 0,
      avgBatchMs: 0,
      retries: 0,
      claimed: 0,
      lastError: null,
      backingOff: false,
    };
  }

  async start(): Promise<void> {
    await this.ensureGroup();
    await this.beat();
    this.heartbeat = setInterval(() => void this.beat().catch(() => undefined), this.heartbeatMs);
    this.heartbeat.unref();
    // run() handles its own failures; this only guards against a throwing `log` callback killing the process.
    this.loop = this.run().catch((err: unknown) => {
      this.died = `writer ${this.consumer} of task ${this.opts.task} stopped unexpectedly: ${(err as Error).message}`;
      this.c.lastError = this.died;
    });
  }

  counters(): WriterCounters {
    return { ...this.c };
  }

  async backlog(): Promise<number> {
    return this.redis.xlen(this.key);
  }

  async flush(opts: { timeoutMs?: number } = {}): Promise<void> {
    if (this.stopping) throw new Error(`writer ${this.consumer} of task ${this.opts.task} is stopped: cannot flush`);
    const last = (await this.redis.xrevrange(this.key, '+', '-', 'COUNT', 1)) as [string, string[]][];
    if (last.length === 0) return;
    const target = last[0]![0];
    const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
    this.hurry++;
    // A batch gathering entries (GATHER_MS) is read and stored now rather than at the end of its wait; a backoff
    // after a failure is left to run its course.
    if (this.gathering) this.wakeSleep?.();
    try {
      for (;;) {
        const left = await this.redis.xrange(this.key, '-', target, 'COUNT', 1);
        if (left.length === 0) return;
        if (this.stopping) throw new Error(`writer ${this.consumer} of task ${this.opts.task} stopped during flush`);
        if (this.died) throw new Error(this.died);
        if (Date.now() > deadline) {
          throw new Error(
            `flush of task ${this.opts.task}: entries up to ${target} are still not stored after ${opts.timeoutMs} ms` +
              ` (${await this.backlog()} in the stream; last error: ${this.c.lastError ?? 'none'})`,
          );
        }
        // Entries held by a writer that just died: look for them now, not at the next periodic round.
        this.nextRecoverAt = 0;
        // Look again when a batch is stored: at the end of a crawl, waiting out a fixed delay after the last
        // batch was a quarter of the time from the last page to the finished run.
        await this.ackedOr(50);
      }
    } finally {
      this.hurry--;
    }
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.stopping = true;
    this.wakeSleep?.();
    // Unblocked, the read returns no entries (as on its timeout): nothing is delivered to a consumer that stops.
    if (this.reading && this.blockingId !== null) {
      const id = this.blockingId;
      await nodeFor(this.redis, this.key)
        .then((node) => node.client('UNBLOCK', id))
        .catch(() => undefined);
    }
    await this.loop;
    if (this.heartbeat) clearInterval(this.heartbeat);
    try {
      // Never delete a consumer with pending entries: DELCONSUMER would drop them from the group for good.
      const mine = await this.redis.xpending(this.key, this.group, '-', '+', 1, this.consumer);
      if (mine.length === 0) await this.redis.xgroup('DELCONSUMER', this.key, this.group, this.consumer);
      await this.redis.del(writerHeartbeatKey(this.opts.task, this.consumer, this.key));
    } catch (err) {
      this.report(`writer ${this.consumer}: cleanup on stop failed: ${(err as Error).message}`);
    }
    this.blocking.disconnect();
  }

  private async learnBlockingId(): Promise<void> {
    try {
      const node = await nodeFor(this.blocking, this.key);
      const id = await node.client('ID');
      node.once('close', () => (this.blockingId = null));
      this.blockingId = id;
    } catch {
      // Unknown: a stop() then waits for the read's BLOCK timeout, as without UNBLOCK.
    }
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      try {
        if (Date.now() >= this.nextRecoverAt) {
          await this.recover();
          this.nextRecoverAt = Date.now() + this.recoverEveryMs;
        }
        const batch = await this.collect();
        if (batch.length > 0) await this.process(batch);
        failures = 0;
      } catch (err) {
        if (this.stopping) break;
        // The stream or group was deleted (task reset): recreate the group and carry on.
        if (/NOGROUP|no such key/i.test((err as Error).message ?? '')) {
          await this.ensureGroup().catch(() => undefined);
          continue;
        }
        failures++;
        const full = isRedisFull(err) ? `${REDIS_FULL_MARK}, it refused a write; ` : '';
        this.fail(`writer ${this.consumer} of task ${this.opts.task}: ${full}${(err as Error).message}`);
        await this.sleep(backoffDelay(failures, this.opts.backoff));
      }
    }
  }

  /** Reads one batch: up to batchSize items, waiting at most flushMs after the first entry. */
  private async collect(): Promise<RawEntry[]> {
    const batch: RawEntry[] = [];
    let items = 0;
    let started = 0;
    while (!this.stopping) {
      const remaining = this.batchSize - items;
      const count = Math.min(this.batchSize, Math.max(1, Math.floor(remaining / Math.max(1, this.itemsPerEntry))));
      if (batch.length > 0 && this.hurry === 0) {
        const left = this.flushMs - (Date.now() - started);
        if (left < 1) break;
        // Workers add one entry per page. A blocking read would return each one alone: a round trip, and a
        // small batch, per page. Letting entries gather first makes one read take many.
        this.gathering = true;
        try {
          await this.sleep(Math.min(left, GATHER_MS));
        } finally {
          this.gathering = false;
        }
        if (this.stopping) break;
      }
      // Only the read that starts a batch waits for entries; the ones that add to it take what is there.
      const block = batch.length === 0 ? (this.hurry > 0 ? 50 : this.idleReadMs) : null;
      const args: (string | number)[] = ['GROUP', this.group, this.consumer, 'COUNT', count];
      if (block !== null) args.push('BLOCK', Math.ceil(block));
      args.push('STREAMS', this.key, '>');
      if (block !== null && this.blockingId === null) {
        await this.learnBlockingId();
        if (this.stopping) break;
      }
      this.reading = block !== null;
      let reply: [string, [string, string[] | null][]][] | null;
      try {
        reply = (await this.blocking.call('XREADGROUP', ...args)) as typeof reply;
      } finally {
        this.reading = false;
      }
      const got = reply?.[0]?.[1] ?? [];
      if (got.length === 0) {
        // Nothing new yet: keep gathering until the flush interval ends (or end now when hurried).
        if (batch.length > 0 && this.hurry === 0 && !this.stopping) continue;
        break;
      }
      if (batch.length === 0) started = Date.now();
      let gotItems = 0;
      for (const [id, fields] of got) {
        batch.push({ id, fields });
        gotItems += Math.max(1, countItems(fields));
      }
      this.itemsPerEntry = 0.7 * this.itemsPerEntry + 0.3 * (gotItems / got.length);
      items += gotItems;
      if (items >= this.batchSize) break;
    }
    return batch;
  }

  /** Writes a batch until it is committed, then acknowledges it. Stopping while the store is down leaves it pending. */
  private async process(entries: readonly RawEntry[]): Promise<void> {
    const decoded = entries.map((e) => decodeEntry(e.id, e.fields, PAGE_FIELD));
    const ids = entries.map((e) => e.id);
    const merged = mergeBatch(decoded, this.policy, this.limits);
    let stored: readonly ItemRow[] = merged.items;
    for (let attempt = 1; ; attempt++) {
      try {
        const t0 = performance.now();
        let result: WriteResult;
        try {
          result = await this.opts.store.writeBatch(merged.pages, merged.items, this.policy, merged.errors);
        } catch (err) {
          if (!(err instanceof StoreDataError)) throw err;
          const kept: ItemRow[] = [];
          result = await this.isolate(decoded, err, kept);
          stored = kept;
        }
        await this.opts.verify?.();
        const ms = performance.now() - t0;
        this.count(result, merged.received, merged.duplicates, ms);
        break;
      } catch (err) {
        this.c.retries++;
        this.c.backingOff = true;
        this.fail(
          `writer ${this.consumer} of task ${this.opts.task}: batch of ${entries.length} entries not stored, retrying: ${(err as Error).message}`,
        );
        if (this.stopping) return;
        await this.touch(ids);
        await this.sleep(backoffDelay(attempt, this.opts.backoff));
        if (this.stopping) return;
      }
    }
    if (this.c.backingOff) {
      this.c.backingOff = false;
      this.report(`writer ${this.consumer} of task ${this.opts.task}: store is back, batch stored`);
    }
    this.c.lastError = null;
    await this.opts.afterCommit?.(ids);
    // One script, not a MULTI (Redis refuses every command queued in a transaction while it is over its maxmemory,
    // and XACK and XDEL are what frees its memory: issue 35, item 2) and not two commands (an entry acknowledged and
    // left in the stream, a connection cut between them, held flush() for ever): lua/ackStored.lua.
    try {
      await withScripts(this.redis).csAckStored(this.key, this.group, ...ids);
    } catch (err) {
      throw new Error(`acknowledging ${ids.length} stored entries failed: ${(err as Error).message}`, { cause: err });
    }
    for (const wake of [...this.onAcked]) wake();
    if (this.opts.onStored && stored.length > 0) {
      try {
        this.opts.onStored(stored);
      } catch (err) {
        this.report(`writer ${this.consumer}: a listener of stored items threw: ${(err as Error).message}`);
      }
    }
  }

  /** Resolves when the next batch is stored and acknowledged, or after `ms`, whichever is first. */
  private ackedOr(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.onAcked.delete(done);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.onAcked.add(done);
    });
  }

  /**
   * The store refused the batch's data: write entry by entry, then item by item, so one bad row becomes an error
   * row instead of blocking everything behind it. Anything but a data error propagates (the caller backs off).
   */
  private async isolate(
    entries: readonly DecodedEntry[],
    cause: StoreDataError,
    stored: ItemRow[],
  ): Promise<WriteResult> {
    this.report(`writer ${this.consumer}: store refused a batch (${cause.message}); writing its entries one by one`);
    const total = { written: 0, inserted: 0, updated: 0, conflicts: 0, pages: 0, errors: 0 };
    const add = (r: WriteResult) => {
      for (const k of Object.keys(total) as (keyof typeof total)[]) total[k] += r[k];
    };
    const store = this.opts.store;
    for (const entry of entries) {
      const m = mergeBatch([entry], this.policy, this.limits);
      try {
        add(await store.writeBatch(m.pages, m.items, this.policy, m.errors));
        stored.push(...m.items);
        continue;
      } catch (err) {
        if (!(err instanceof StoreDataError)) throw err;
      }
      add(await store.writeBatch(m.pages, [], this.policy, m.errors));
      const page = m.pages[0];
      for (const item of m.items) {
        try {
          add(await store.writeBatch([], [item], this.policy));
          stored.push(item);
        } catch (err) {
          if (!(err instanceof StoreDataError)) throw err;
          const row: ErrorRow = {
            id: `${entry.id}/store/${item.type}/${item.key}`.slice(0, 1000),
            kind: 'store',
            run: item.run,
            url: item.url,
            rule: item.rule,
            type: item.type,
            key: item.key.slice(0, 200),
            message: err.message,
            at: page?.fetchedAt ?? item.fetchedAt,
          };
          total.errors += await store.writeErrors([row]);
        }
      }
    }
    return total;
  }

  /** Takes over entries of writers whose heartbeat is gone, then of any writer that sat on them too long. */
  private async recover(): Promise<void> {
    // Our own pending entries exist only when acknowledging failed (Redis went away after a commit); '>' never
    // delivers them again, so re-read them from our pending list. Replaying a stored batch is harmless.
    while (!this.stopping) {
      const reply = (await this.redis.call(
        'XREADGROUP',
        'GROUP',
        this.group,
        this.consumer,
        'COUNT',
        this.batchSize,
        'STREAMS',
        this.key,
        '0',
      )) as [string, [string, string[] | null][]][] | null;
      const own = reply?.[0]?.[1] ?? [];
      if (own.length === 0) break;
      await this.process(own.map(([id, fields]) => ({ id, fields })));
    }
    const consumers = (await this.redis.xinfo('CONSUMERS', this.key, this.group)) as (string | number)[][];
    for (const flat of consumers) {
      const info = pairs(flat);
      const name = String(info.name);
      if (name === this.consumer) continue;
      if ((await this.redis.exists(writerHeartbeatKey(this.opts.task, name, this.key))) === 1) continue;
      let pending = Number(info.pending);
      while (pending > 0 && !this.stopping) {
        const rows = (await this.redis.xpending(this.key, this.group, '-', '+', this.batchSize, name)) as [
          string,
          string,
          number,
          number,
        ][];
        if (rows.length === 0) break;
        const claimed = (await this.redis.xclaim(this.key, this.group, this.consumer, 0, ...rows.map((r) => r[0]))) as [
          string,
          string[] | null,
        ][];
        this.c.claimed += claimed.length;
        if (claimed.length > 0) await this.process(claimed.map(([id, fields]) => ({ id, fields })));
        pending -= rows.length;
      }
      if (this.stopping) return;
      // The dead writer's pending list is empty now (what we did not claim was deleted from the stream).
      const left = await this.redis.xpending(this.key, this.group, '-', '+', 1, name);
      if (left.length === 0) await this.redis.xgroup('DELCONSUMER', this.key, this.group, name);
    }
    let cursor = '0-0';
    do {
      const reply = (await this.redis.xautoclaim(
        this.key,
        this.group,
        this.consumer,
        this.claimIdleMs,
        cursor,
        'COUNT',
        this.batchSize,
      )) as [string, [string, string[] | null][], string[]?];
      cursor = reply[0];
      const entries = reply[1].filter(([id]) => id);
      if (entries.length > 0) {
        this.c.claimed += entries.length;
        await this.process(entries.map(([id, fields]) => ({ id, fields })));
      }
    } while (cursor !== '0-0' && !this.stopping);
  }

  private async ensureGroup(): Promise<void> {
    try {
      await this.redis.xgroup('CREATE', this.key, this.group, '0', 'MKSTREAM');
    } catch (err) {
      if (!/BUSYGROUP/.test((err as Error).message)) {
        throw new Error(`cannot create consumer group '${this.group}' on ${this.key}: ${(err as Error).message}`, {
          cause: err,
        });
      }
    }
  }

  private async beat(): Promise<void> {
    const value = JSON.stringify({ host: hostname(), pid: process.pid, at: Date.now() });
    await this.redis.set(
      writerHeartbeatKey(this.opts.task, this.consumer, this.key),
      value,
      'PX',
      this.heartbeatMs * 3,
    );
  }

  /** Resets the idle time of entries we keep retrying, so the XAUTOCLAIM safety net leaves them with us. */
  private async touch(ids: readonly string[]): Promise<void> {
    try {
      await this.redis.xclaim(this.key, this.group, this.consumer, 0, ...ids, 'JUSTID');
    } catch {
      // Redis unreachable too: the entries stay pending either way.
    }
  }

  private count(r: WriteResult, received: number, duplicates: number, ms: number): void {
    const c = this.c;
    c.received += received;
    c.duplicates += duplicates;
    c.conflicts += r.conflicts;
    c.written += r.written;
    c.inserted += r.inserted;
    c.updated += r.updated;
    c.pages += r.pages;
    c.errors += r.errors;
    c.batches++;
    c.lastBatchMs = Math.round(ms * 10) / 10;
    this.totalBatchMs += ms;
    c.avgBatchMs = Math.round((this.totalBatchMs / c.batches) * 10) / 10;
  }

  private fail(message: string): void {
    if (this.c.lastError !== message) this.report(message);
    this.c.lastError = message;
  }

  private report(message: string): void {
    (this.opts.log ?? ((m: string) => console.warn(`crawl-studio: ${m}`)))(message);
  }

  /** A sleep that stop() cuts short (and flush(), while a batch gathers). */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.wakeSleep = () => {
        this.wakeSleep = null;
        done();
      };
    });
  }
}

/** How long the writer lets entries gather between reads once a batch has begun (bounded by flushMs). */
const GATHER_MS = 50;

function countItems(fields: string[] | null): number {
  if (!fields) return 0;
  // Cheap estimate without parsing: the number of '"key":' members is the number of items (keys are items' only
  // "key" members unless a field is itself named key — an overestimate only makes batches a little smaller).
  const raw = fields[1] ?? '';
  let n = 0;
  for (let i = raw.indexOf('"key":'); i !== -1; i = raw.indexOf('"key":', i + 6)) n++;
  return n;
}

function pairs(flat: (string | number)[]): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = flat[i + 1]!;
  return out;
}
