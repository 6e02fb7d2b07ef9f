import { isCluster, type Redis } from '../redis/connect';
import ackStored from './lua/ackStored.lua';
import countFailed from './lua/countFailed.lua';
import countSkipped from './lua/countSkipped.lua';
import discover from './lua/discover.lua';
import drain from './lua/drain.lua';
import drainFinal from './lua/drainFinal.lua';
import drainPart from './lua/drainPart.lua';
import dropWaiting from './lua/dropWaiting.lua';
import fill from './lua/fill.lua';
import keepScreenshot from './lua/keepScreenshot.lua';
import findPage from './lua/findPage.lua';
import finishPage from './lua/finishPage.lua';
import frontier from './lua/frontier.lua';
import lease from './lua/lease.lua';
import pageDone from './lua/pageDone.lua';
import politeness from './lua/politeness.lua';
import ratelimit from './lua/ratelimit.lua';
import releaseJobs from './lua/releaseJobs.lua';
import reserve from './lua/reserve.lua';
import sent from './lua/sent.lua';
import sessionRetire from './lua/sessionRetire.lua';
import sessionSet from './lua/sessionSet.lua';
import sessionTake from './lua/sessionTake.lua';
import sessionWait from './lua/sessionWait.lua';
import settle from './lua/settle.lua';

// The engine's Lua scripts, defined once per connection (ioredis sends EVALSHA and falls back to EVAL). Scripts
// cannot include one another, so the shared parts (frontier.lua, finishPage.lua) are prepended to those using them.

/** A script's reply that ends with the window's fill (lua/fill.lua documents it). */
export type FillReply = (string | number)[];

export interface CrawlScripts {
  /** lua/ackStored.lua: XACK and XDEL of committed entries in one call; how many were still pending. */
  csAckStored(stream: string, group: string, ...ids: string[]): Promise<number>;
  /** lua/countFailed.lua: a job failed for good counted once; 1 when counted now. */
  csCountFailed(
    stats: string,
    hosts: string,
    counted: string,
    jobId: string,
    group: string,
    hostField: string,
    ttlMs: number,
  ): Promise<number>;
  /** lua/countSkipped.lua: a skipped job counted once; 1 when counted now. */
  csCountSkipped(...keysThenArgs: (string | number)[]): Promise<number>;
  csDiscover(numKeys: number, ...args: (string | number)[]): Promise<FillReply>;
  csDrain(...args: (string | number)[]): Promise<number>;
  csDrainFinal(...args: (string | number)[]): Promise<number>;
  csDrainPart(...args: (string | number)[]): Promise<[number, number]>;
  csDropWaiting(...args: (string | number)[]): Promise<[number, number]>;
  csFill(...args: (string | number)[]): Promise<FillReply>;
  csFindPage(...args: (string | number)[]): Promise<[number, string]>;
  /** lua/keepScreenshot.lua: a rendered page's screenshot kept in its run's hash, the oldest past `maxKept` dropped. */
  csKeepScreenshot(
    shots: string,
    order: string,
    url: string,
    facts: string,
    jpeg: Buffer,
    at: number,
    maxKept: number,
    ttlMs: number,
  ): Promise<number>;
  csLease(...args: (string | number)[]): Promise<[number, string?, number?]>;
  csPageDone(...args: (string | number)[]): Promise<FillReply>;
  csPoliteness(...args: (string | number)[]): Promise<[number, number]>;
  csRateLimit(...args: (string | number)[]): Promise<number>;
  csReleaseJobs(...args: (string | number)[]): Promise<string[]>;
  csReserve(...args: (string | number)[]): Promise<number>;
  csSent(...args: (string | number)[]): Promise<number>;
  /** lua/sessionRetire.lua: 1 when this call retired generation `id` of the session. */
  csSessionRetire(session: string, id: string): Promise<number>;
  /** lua/sessionSet.lua: field, value pairs ('' deletes) set in generation `id` of the session; 0 once retired. */
  csSessionSet(session: string, id: string, ...fieldValues: string[]): Promise<number>;
  /** lua/sessionTake.lua over `numKeys` slots: [slot index, id, pages, login], or [-1, soonest end of a wait]. */
  csSessionTake(numKeys: number, ...keysThenArgs: (string | number)[]): Promise<[number, string, number?, string?]>;
  /** lua/sessionWait.lua: the session sends nothing to the host of `field` before `until` (ms). */
  csSessionWait(session: string, id: string, field: string, until: number): Promise<number>;
  csSettle(...args: (string | number)[]): Promise<FillReply>;
}

const defined = new WeakSet<Redis>();

/**
 * Scripts whose first argument is not a key (csDiscover's and csSessionTake's is their number of keys). A cluster client's
 * auto-pipelining groups a command by the slot of its first argument, so it put csDiscover with the commands of
 * whatever slot "7" hashes to, and the pipeline failed ('All keys in the pipeline should belong to the same slots
 * allocation group'): the job was retried and its page fetched again. These are sent on their own.
 */
const NO_KEY_FIRST = ['csDiscover', 'csSessionTake'];

export function withScripts(redis: Redis): Redis & CrawlScripts {
  if (!defined.has(redis)) {
    if (isCluster(redis)) {
      const ignored = redis.options.autoPipeliningIgnoredCommands ?? [];
      redis.options.autoPipeliningIgnoredCommands = [...ignored, ...NO_KEY_FIRST.filter((c) => !ignored.includes(c))];
    }
    redis.defineCommand('csAckStored', { numberOfKeys: 1, lua: ackStored });
    redis.defineCommand('csCountFailed', { numberOfKeys: 3, lua: countFailed });
    redis.defineCommand('csCountSkipped', { numberOfKeys: 5, lua: countSkipped });
    redis.defineCommand('csDiscover', { lua: `${frontier}\n${finishPage}\n${discover}` });
    redis.defineCommand('csDrain', { numberOfKeys: 8, lua: `${frontier}\n${drain}` });
    redis.defineCommand('csDrainFinal', { numberOfKeys: 2, lua: drainFinal });
    redis.defineCommand('csDrainPart', { numberOfKeys: 6, lua: `${frontier}\n${drainPart}` });
    redis.defineCommand('csDropWaiting', { numberOfKeys: 1, lua: dropWaiting });
    redis.defineCommand('csFill', { numberOfKeys: 1, lua: `${frontier}\n${fill}` });
    redis.defineCommand('csFindPage', { numberOfKeys: 1, lua: findPage });
    redis.defineCommand('csKeepScreenshot', { numberOfKeys: 2, lua: keepScreenshot });
    redis.defineCommand('csLease', { numberOfKeys: 1, lua: lease });
    redis.defineCommand('csPageDone', { numberOfKeys: 4, lua: `${frontier}\n${finishPage}\n${pageDone}` });
    redis.defineCommand('csPoliteness', { numberOfKeys: 5, lua: politeness });
    redis.defineCommand('csRateLimit', { numberOfKeys: 1, lua: ratelimit });
    redis.defineCommand('csReleaseJobs', { numberOfKeys: 2, lua: releaseJobs });
    redis.defineCommand('csReserve', { numberOfKeys: 1, lua: reserve });
    redis.defineCommand('csSent', { numberOfKeys: 3, lua: sent });
    redis.defineCommand('csSessionRetire', { numberOfKeys: 1, lua: sessionRetire });
    redis.defineCommand('csSessionSet', { numberOfKeys: 1, lua: sessionSet });
    redis.defineCommand('csSessionTake', { lua: sessionTake });
    redis.defineCommand('csSessionWait', { numberOfKeys: 1, lua: sessionWait });
    redis.defineCommand('csSettle', { numberOfKeys: 1, lua: `${frontier}\n${settle}` });
    defined.add(redis);
  }
  return redis as Redis & CrawlScripts;
}
