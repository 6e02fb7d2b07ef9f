import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { descendants, descendantsMemory, killChildGroups } from './processes';
import { loadPlaywright } from './load';
import { Egress } from './egress';
import { claimProfile, profileDirOf, removeProfile, sweepProfiles } from './profiles';
import { withDisabledFeatures } from './features';

// One Chromium per worker process, shared by its tasks: launched on the first rendered page, at most
// `maxOpenPages` pages open at once, replaced after `retireAfterPages` pages or above `maxMemoryBytes` (Chromium
// leaks over long runs: Crawlee retires browsers for the same reason), and replaced at once when it crashes or
// stops answering. The page that hung or crashed it fails its job with a retryable error (browser-hung,
// browser-crash): the job is retried per the task's policy, as after a fetch timeout. The other pages that were on
// it fail with 'closed', which is not theirs to pay for: they go back without spending an attempt (render.ts).

/** Flags that let Chromium run as root in a container with no network of its own to update from. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-dev-shm-usage',
  // WebRTC's UDP would go around the proxy every request of a page goes through (egress.ts).
  '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
];

/** Extra Chromium flags, space-separated (e.g. --js-flags=--max-old-space-size=512). */
export const BROWSER_ARGS_ENV = 'CRAWL_STUDIO_BROWSER_ARGS';

export interface BrowserPoolOptions {
  readonly executablePath: string;
  readonly maxOpenPages: number;
  readonly retireAfterPages?: number;
  readonly maxMemoryBytes?: number;
  readonly extraArgs?: readonly string[];
  readonly log?: (level: 'info' | 'warn' | 'error', message: string) => void;
}

/** The browser went away under a page (crashed, killed, hung): retryable, and the browser is replaced. */
export class BrowserGoneError extends Error {
  constructor(
    readonly kind: 'crash' | 'hung' | 'closed',
    message: string,
  ) {
    super(message);
    this.name = 'BrowserGoneError';
  }
}

/** A kind of context pages can share one after the other: the same options (proxy, user agent, headers). */
export interface ContextKind<X> {
  readonly key: string;
  /** A new context's options, and what goes with the context until it is closed (`dispose`). */
  create(): { readonly options: Parameters<Browser['newContext']>[0]; readonly extra: X; dispose(): void };
}

interface PooledContext {
  readonly key: string;
  readonly context: BrowserContext;
  readonly extra: unknown;
  readonly dispose: () => void;
  /** The context's one page, kept from render to render. */
  page: Page | null;
  uses: number;
}

/**
 * Renders a kept page serves before its context is closed and a new one made. A kept renderer carries the memory of
 * the pages it rendered (147 MB each after up to 100, against a fresh one's 32 MB), and collecting it costs CPU: on
 * the bench's rendered row, 5 uses took Chromium's peak PSS from 1,025 to 527-540 MB with as many pages/s and less
 * CPU a page than 100 (bench/results/2026-12-05-browser-uses.md).
 */
const MAX_USES = 5;

async function newPooled<X>(browser: Browser, kind: ContextKind<X>): Promise<PooledContext> {
  const made = kind.create();
  try {
    return {
      key: kind.key,
      context: await browser.newContext(made.options),
      extra: made.extra,
      dispose: () => made.dispose(),
      page: null,
      uses: 0,
    };
  } catch (err) {
    made.dispose();
    throw err;
  }
}

async function keptPage(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  // A page leaving for the next URL must not be held by its beforeunload; other dialogs are dismissed, as Playwright
  // does when nobody listens.
  page.on('dialog', (d) => void (d.type() === 'beforeunload' ? d.accept() : d.dismiss()).catch(() => undefined));
  return page;
}

/**
 * Parks a kept page between renders: its window's name forgotten and its scripts stopped (DevTools'
 * Emulation.setScriptExecutionDisabled: no timer, event or late answer runs the site's code until the next render
 * starts them again), and every request it makes meanwhile refused (isParked, render.ts). The page stays where the
 * render left it, in its renderer, and the next render's navigation leaves it. Taking it to about:blank instead, as
 * before, was a navigation a page: with the spare renderer gone too (features.ts), the bench's rendered row went from
 * 309-316 to 215-220 ms of CPU a page, side by side (bench/results/2026-12-05-browser-spare.md). False if the page
 * would not stop: its context is not kept.
 */
async function park(page: Page | null): Promise<boolean> {
  if (!page) return false;
  try {
    parkedPages.add(page);
    await withTimeout(
      page.evaluate(() => {
        window.name = '';
        // Stops what the document still loads and the navigation it has scheduled (a meta refresh).
        window.stop();
      }),
      2_000,
    );
    await withTimeout(scriptsOff(page, true), 2_000);
    return true;
  } catch {
    return false;
  }
}

/** Starts a parked page's scripts again, for its next render; false if it would not (its context is not used). */
async function unpark(page: Page | null): Promise<boolean> {
  if (!page) return false;
  return withTimeout(scriptsOff(page, false), 2_000).then(
    () => {
      parkedPages.delete(page);
      return true;
    },
    () => false,
  );
}

/** A kept page's DevTools session, one for its life (it ends with the page). */
const sessions = new WeakMap<Page, Promise<CDPSession>>();
/** Pages parked between renders, from before their scripts stop until after they start again. */
const parkedPages = new WeakSet<Page>();

/** The page is between renders: whatever it asks for belongs to no render (render.ts refuses it). */
export const isParked = (page: Page): boolean => parkedPages.has(page);

async function scriptsOff(page: Page, off: boolean): Promise<void> {
  let session = sessions.get(page);
  if (!session) sessions.set(page, (session = page.context().newCDPSession(page)));
  await (await session).send('Emulation.setScriptExecutionDisabled', { value: off });
}

function takeIdle(gen: Generation, key: string): PooledContext | null {
  const i = gen.idle.findIndex((c) => c.key === key);
  return i < 0 ? null : gen.idle.splice(i, 1)[0]!;
}

/** Back to the idle list, the newest last; past `cap` idle contexts the oldest is closed. */
function putIdle(gen: Generation, c: PooledContext, cap: number): void {
  gen.idle.push(c);
  while (gen.idle.length > Math.max(1, cap)) void closePooled(gen.idle.shift()!);
}

async function closePooled(c: PooledContext): Promise<void> {
  await withTimeout(c.context.close(), 5_000).catch(() => undefined);
  c.dispose();
}

interface Generation {
  readonly n: number;
  readonly browser: Promise<Browser>;
  /** Contexts no page uses now, oldest first. */
  readonly idle: PooledContext[];
  /** The process group of this browser, once launched (null where /proc is not readable). */
  pgid: number | null;
  open: number;
  served: number;
  retiring: boolean;
  dead: boolean;
  /** Why it was killed, when a page hung or crashed it. */
  killedFor: string | null;
  /** Its temporary profile directory, once launched (profiles.ts). */
  profile: string | null;
}

export class BrowserPool {
  private current: Generation | null = null;
  private generations = 0;
  private free: number;
  private readonly waiting: (() => void)[] = [];
  private closed = false;
  private readonly live = new Set<Generation>();
  private egressStarted: Promise<Egress> | null = null;

  constructor(private readonly opts: BrowserPoolOptions) {
    this.free = Math.max(1, opts.maxOpenPages);
    // What workers killed before left in the temp folder (their browsers' profiles), removed before this one adds.
    const removed = sweepProfiles();
    if (removed.length)
      opts.log?.('info', `removed ${removed.length} browser profile folder(s) left by workers that died`);
  }

  /** Browsers launched so far (the first one included). */
  launched(): number {
    return this.generations;
  }

  /**
   * Runs `work` on a page of a context of `kind` that no other render uses meanwhile: an idle one of the same kind,
   * or a new one. Contexts and their page are kept from render to render: a new context and page per render cost
   * 2.8 times the CPU of a kept page navigated to the next URL (Chromium makes a profile, a network context and a
   * renderer process for each: 1,155 against 414 ms a page at 4 in flight, bench, issue 18). The caller leaves
   * nothing of one render for the next (render.ts clears cookies and storage), or calls `discard` when it cannot;
   * between renders the page is parked: its scripts stopped until the next render (park). `deadlineMs` bounds the
   * whole: past it, the browser is taken as hung and replaced.
   */
  async withPage<T, X>(
    kind: ContextKind<X>,
    deadlineMs: number,
    work: (page: Page, extra: X, discard: () => void) => Promise<T>,
  ): Promise<T> {
    if (this.closed) throw new BrowserGoneError('closed', 'the browser pool is closed');
    await this.acquire();
    let gen: Generation | null = null;
    let held: PooledContext | null = null;
    let keep = true;
    let timer: NodeJS.Timeout | undefined;
    let onCrash: (() => void) | null = null;
    try {
      gen = this.generation();
      gen.open++;
      const g = gen;
      const browser = await g.browser;
      const run = (async () => {
        const parked = takeIdle(g, kind.key);
        if (parked && !(await unpark(parked.page))) void closePooled(parked);
        else held = parked;
        held ??= await newPooled(browser, kind);
        const page = held.page ?? (held.page = await keptPage(held.context));
        held.uses++;
        const crashed = new Promise<never>((_, reject) => {
          onCrash = () => reject(new BrowserGoneError('crash', "the page crashed the browser's renderer"));
          page.once('crash', onCrash);
        });
        crashed.catch(() => undefined);
        return Promise.race([work(page, held.extra as X, () => void (keep = false)), crashed]);
      })();
      const hung = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new BrowserGoneError('hung', `the browser did not answer within ${deadlineMs} ms`)),
          deadlineMs,
        );
      });
      return await Promise.race([run, hung]);
    } catch (err) {
      if (gen && err instanceof BrowserGoneError) this.kill(gen, err.message);
      else if (
        gen &&
        (gen.dead ||
          !(await gen.browser.then(
            (b) => b.isConnected(),
            () => false,
          )))
      ) {
        // Taken down with its browser: by another page that hung or crashed it (that page is the one blamed), or by
        // the browser itself. Either way nothing this page did (render.ts sends it back without an attempt).
        const why = gen.killedFor
          ? `the browser was replaced under it (${gen.killedFor})`
          : `the browser went away: ${err instanceof Error ? err.message : String(err)}`;
        throw new BrowserGoneError('closed', why);
      }
      throw err;
    } finally {
      clearTimeout(timer);
      const h = held as PooledContext | null;
      if (h?.page && onCrash) h.page.off('crash', onCrash);
      if (h && gen && !gen.dead) {
        if (keep && !gen.retiring && h.uses < MAX_USES && (await park(h.page)))
          putIdle(gen, h, this.opts.maxOpenPages * 2);
        else await closePooled(h);
      } else if (h) h.dispose();
      if (gen) {
        gen.open--;
        gen.served++;
        this.maybeRetire(gen);
      }
      this.release();
    }
  }

  /** The proxy the pages' requests leave through (egress.ts), started with the first page that needs it. */
  egress(): Promise<Egress> {
    this.egressStarted ??= Egress.start();
    return this.egressStarted;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.live].map((g) => this.shutdown(g)));
    await (await this.egressStarted?.catch(() => null))?.close();
  }

  private generation(): Generation {
    if (this.current && !this.current.retiring && !this.current.dead) return this.current;
    const n = ++this.generations;
    const before = new Set(childGroups());
    const gen: Generation = {
      n,
      pgid: null,
      idle: [],
      open: 0,
      served: 0,
      retiring: false,
      dead: false,
      killedFor: null,
      profile: null,
      browser: loadPlaywright().then((pw) =>
        pw.chromium.launch({
          executablePath: this.opts.executablePath,
          // Chromium reads one --disable-features: Playwright's, ours and the user's merged into it (features.ts).
          args: [...CHROMIUM_ARGS, ...withDisabledFeatures(this.opts.extraArgs ?? [])],
          // Our own signal handling stops the worker; Playwright's would kill the browser under in-flight pages.
          handleSIGINT: false,
          handleSIGTERM: false,
          handleSIGHUP: false,
          timeout: 30_000,
        }),
      ),
    };
    gen.browser.then(
      (b) => {
        gen.pgid = childGroups().find((g) => !before.has(g)) ?? null;
        // Ours until this process dies: a worker killed with SIGKILL leaves it to the next one to remove.
        gen.profile = gen.pgid !== null ? profileDirOf(gen.pgid) : null;
        if (gen.profile) claimProfile(gen.profile);
        this.opts.log?.(
          'info',
          `browser ${n} started (${this.opts.executablePath}${gen.pgid ? `, pid ${gen.pgid}` : ''})`,
        );
        b.on('disconnected', () => {
          gen.dead = true;
          this.live.delete(gen);
          if (this.current === gen) this.current = null;
        });
      },
      () => {
        gen.dead = true;
        this.live.delete(gen);
        if (this.current === gen) this.current = null;
      },
    );
    this.current = gen;
    this.live.add(gen);
    return gen;
  }

  private maybeRetire(gen: Generation): void {
    if (gen.dead) return;
    if (!gen.retiring) {
      const pages = this.opts.retireAfterPages ?? 200;
      // Measured every 10 pages: a /proc walk is cheap, not free.
      const memory = gen.served % 10 === 0 ? descendantsMemory() : 0;
      if (gen.served >= pages || memory > (this.opts.maxMemoryBytes ?? 1024 ** 3)) {
        gen.retiring = true;
        if (this.current === gen) this.current = null;
        this.opts.log?.(
          'info',
          `browser ${gen.n} retired after ${gen.served} pages${memory ? ` (${Math.round(memory / 1024 / 1024)} MB)` : ''}`,
        );
      }
    }
    if (gen.retiring && gen.open === 0) void this.shutdown(gen);
  }

  private kill(gen: Generation, why: string): void {
    if (gen.dead) return;
    this.opts.log?.('warn', `browser ${gen.n} replaced: ${why}`);
    gen.dead = true;
    gen.killedFor = why;
    if (this.current === gen) this.current = null;
    void this.shutdown(gen);
  }

  /** Close, and kill the process group when close does not finish: no browser outlives its pool. */
  private async shutdown(gen: Generation): Promise<void> {
    gen.dead = true;
    if (this.current === gen) this.current = null;
    this.live.delete(gen);
    // Their contexts go with the browser; what went with each (an egress lease) is let go here.
    for (const c of gen.idle.splice(0)) c.dispose();
    const browser = await gen.browser.catch(() => null);
    if (browser) await withTimeout(browser.close(), 5_000).catch(() => undefined);
    if (gen.pgid !== null) {
      const pgid = gen.pgid;
      killChildGroups((pid) => pid === pgid);
    }
    // Playwright removes it when the browser closes; not always when the browser had to be killed.
    if (gen.profile) removeProfile(gen.profile);
  }

  private async acquire(): Promise<void> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

function childGroups(): number[] {
  return descendants()
    .filter((p) => p.ppid === process.pid && p.pgid === p.pid)
    .map((p) => p.pid);
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error('timed out')), ms))),
  ]).finally(() => clearTimeout(timer));
}
