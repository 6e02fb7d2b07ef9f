import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { changesFeed, FeedError } from './feed';
import type { AddressInfo } from 'node:net';
import { readFile } from 'node:fs/promises';
import type { Registry } from 'prom-client';
import type { Redis } from '../redis/connect';
import { isPermissionError, isReadOnlyError, permissionText, readOnlyText } from '../redis/check';
import type { Log } from '../core/logLine';
import { ActionError, enqueue, pause, resume, retryReason, stop, type ActionResult } from './actions';
import { allowedHosts, bindRefusal, hostAllowed, tokenOf, tokensEqual } from './auth';
import { monitorRegistry } from './metrics';
import { readScreenshot } from '../observe/screenshots';
import { CSP, PAGE_CSS, PAGE_HTML } from './page';
import { MonitorViews } from './views';

// `crawl-studio monitor`: an HTTP server over one Redis. Every request reads Redis afresh through the views'
// read-models (views.ts); the page polls the JSON API. Reads need an allowed Host header; actions need the token.

export interface MonitorOptions {
  readonly redis: Redis;
  readonly bind: string;
  /** 0: any free port. */
  readonly port: number;
  readonly token: string;
  /** Whether the operator gave the token (a generated one is refused beyond loopback). */
  readonly tokenGiven: boolean;
  readonly allowHosts: readonly string[];
  /** Workers silent for longer are left out of the default view. */
  readonly hideWorkersAfterMs: number;
  /** The page's bundled script (dist/media/monitor/main.js). */
  readonly scriptPath: string;
  /** Where actions (taken or refused) and server errors are logged; never with the token. */
  readonly log?: Log;
  /** While the connection to Redis is lost: which, why and for how long (redis/check.ts watchConnection), else null. */
  readonly redisLost?: () => string | null;
}

export interface Monitor {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

const MAX_BODY = 256 * 1024;
const HEALTH_TIMEOUT_MS = 2_000;
/** A read that Redis has not answered by then is answered 503: the page says why, and a scrape fails, within theirs. */
const READ_TIMEOUT_MS = 8_000;
const ACTIONS = ['pause', 'resume', 'retry', 'enqueue', 'stop'] as const;
type Action = (typeof ACTIONS)[number];

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A 503 for a Redis out of reach: the log already says so on every reconnect, so a read refused for it is not logged. */
class RedisUnavailable extends HttpError {
  constructor(why: string) {
    super(503, `Redis unavailable: ${why}`);
  }
}

export async function startMonitor(o: MonitorOptions): Promise<Monitor> {
  const refusal = bindRefusal(o.bind, o.tokenGiven);
  if (refusal) throw new Error(refusal);
  const script = await readFile(o.scriptPath, 'utf8').catch((err: NodeJS.ErrnoException) => {
    throw new Error(`the monitor's page script ${o.scriptPath} is missing (${err.code}): build with node esbuild.mjs`);
  });
  const views = new MonitorViews(o.redis, o.hideWorkersAfterMs);
  const registry = monitorRegistry(o.redis, views);
  const hosts = allowedHosts(o.bind, o.allowHosts);
  const server = createServer((req, res) => {
    void handle({ req, res, o, views, registry, script, hosts }).catch((caught: unknown) => {
      // The monitor's Redis user may read and not act (README: the grants a user needs): said as the check says it.
      // A monitor on a replica (a read-only dashboard) shows everything; its buttons need the primary.
      const err = isPermissionError(caught)
        ? new HttpError(403, permissionText(caught))
        : isReadOnlyError(caught)
          ? new HttpError(409, readOnlyText())
          : caught;
      const status = err instanceof HttpError || err instanceof ActionError ? err.status : 500;
      const message = err instanceof Error ? err.message : String(err);
      if (req.method === 'POST')
        o.log?.(
          status >= 500 ? 'error' : 'warn',
          `${req.method} ${(req.url ?? '').slice(0, 200)} refused (${status}): ${message}`,
          { event: 'monitor-action-refused', status },
        );
      else if (status >= 500 && !(err instanceof RedisUnavailable))
        o.log?.('error', `${req.method} ${(req.url ?? '').slice(0, 200)} failed: ${message}`, {
          event: 'monitor-error',
          status,
        });
      if (!res.headersSent) send(res, status, { error: err instanceof Error ? err.message : String(err) });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(`cannot listen on ${o.bind}:${o.port} (${err.code ?? err.message})`)),
    );
    server.listen(o.port, o.bind, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = o.bind.includes(':') ? `[${o.bind}]` : o.bind;
  return {
    url: `http://${host}:${port}`,
    port,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await views.close();
    },
  };
}

interface Ctx {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly o: MonitorOptions;
  readonly views: MonitorViews;
  readonly registry: Registry;
  readonly script: string;
  readonly hosts: ReadonlySet<string>;
}

async function handle(c: Ctx): Promise<void> {
  const { req, res } = c;
  securityHeaders(res);
  // DNS rebinding: a page of another site that got its name to resolve to this address still sends its own name.
  if (!hostAllowed(req.headers.host, c.hosts))
    throw new HttpError(
      403,
      `Host '${String(req.headers.host ?? '').slice(0, 100)}' is not one this monitor answers to (add it with --allow-host)`,
    );
  const url = new URL(req.url ?? '/', 'http://monitor.invalid');
  const path = url.pathname;
  if (req.method === 'GET' || req.method === 'HEAD') {
    if (path === '/') return sendText(res, 200, 'text/html; charset=utf-8', PAGE_HTML);
    if (path === '/monitor.js') return sendText(res, 200, 'text/javascript; charset=utf-8', c.script);
    if (path === '/monitor.css') return sendText(res, 200, 'text/css; charset=utf-8', PAGE_CSS);
    if (path === '/healthcheck') return healthcheck(c);
    return withinReadTimeout(c, () => read(c, url));
  }
  if (req.method === 'POST') return post(c, path);
  res.setHeader('allow', 'GET, HEAD, POST');
  throw new HttpError(405, `${req.method} is not served here`);
}

/**
 * While Redis is out of reach its commands wait for the reconnect, with no end: the page's polls and Prometheus's
 * scrapes hung, and the page kept its last figures as if they were current. They get a 503 saying why instead.
 */
function redisReachable(c: Ctx): void {
  const lost = c.o.redisLost?.() ?? null;
  if (lost !== null) throw new RedisUnavailable(`${lost}; the monitor reconnects by itself`);
}

async function withinReadTimeout(c: Ctx, reading: () => Promise<void>): Promise<void> {
  redisReachable(c);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new RedisUnavailable(`no answer within ${READ_TIMEOUT_MS / 1000} s`)),
      READ_TIMEOUT_MS,
    );
  });
  try {
    await Promise.race([reading(), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** GET of what is read from Redis: /metrics and the JSON API. */
async function read(c: Ctx, url: URL): Promise<void> {
  const { res } = c;
  const path = url.pathname;
  if (path === '/metrics') return sendText(res, 200, c.registry.contentType, await c.registry.metrics());
  if (path === '/api/tasks') return send(res, 200, await c.views.tasks());
  if (path === '/api/workers')
    return send(res, 200, await c.views.workers({ all: url.searchParams.get('all') === '1' }));
  const m = /^\/api\/tasks\/([^/]+)$/.exec(path);
  if (m) return send(res, 200, await c.views.task(await knownTask(c, m[1]!)));
  const shot = /^\/api\/tasks\/([^/]+)\/screenshot$/.exec(path);
  if (shot) return screenshot(c, await knownTask(c, shot[1]!), url);
  const feed = /^\/api\/tasks\/([^/]+)\/changes\.atom$/.exec(path);
  if (feed) return sendText(res, 200, 'application/atom+xml; charset=utf-8', await changesFeedOr404(c, feed[1]!, url));
  throw new HttpError(404, `no ${path} here`);
}

/** POST of an action on a task. */
async function post(c: Ctx, path: string): Promise<void> {
  const { req, res } = c;
  const m = /^\/api\/tasks\/([^/]+)\/([a-z]+)$/.exec(path);
  if (!m || !(ACTIONS as readonly string[]).includes(m[2]!)) throw new HttpError(404, `no action ${path} here`);
  // The token before anything else is read: without it nothing changes, whatever the request holds.
  const token = tokenOf(req.headers);
  if (token === null || !tokensEqual(token, c.o.token))
    throw new HttpError(
      403,
      token === null
        ? 'actions need the token (Authorization: Bearer T or X-Crawl-Studio-Token: T); the monitor is read-only without it'
        : 'wrong token',
    );
  // Not bounded in time as reads are: an action that waits for the reconnect is carried out then, and says so.
  redisReachable(c);
  const task = await knownTask(c, m[1]!);
  const body = await readJson(req);
  const result = await act(c, m[2] as Action, task, body);
  c.views.forget(task);
  c.o.log?.('info', `${m[2]} ${task}: ${result.message}`, {
    event: 'monitor-action',
    task,
    action: m[2],
    count: result.count,
  });
  return send(res, 200, result);
}

async function act(c: Ctx, action: Action, task: string, body: Record<string, unknown>): Promise<ActionResult> {
  switch (action) {
    case 'pause':
      return pause(c.o.redis, task);
    case 'resume':
      return resume(c.o.redis, task);
    case 'retry':
      if (typeof body.reason !== 'string')
        throw new HttpError(400, 'retry takes {"reason": "<failure reason>"}, e.g. {"reason": "http-404"}');
      return retryReason(c.o.redis, task, body.reason);
    case 'stop':
      if (body.run !== undefined && typeof body.run !== 'string')
        throw new HttpError(400, 'stop takes {} or {"run": "<the run id it must be>"}');
      return stop(c.o.redis, task, body.run);
    case 'enqueue':
      if (!Array.isArray(body.urls)) throw new HttpError(400, 'enqueue takes {"urls": ["https://…", …]}');
      return enqueue(c.o.redis, task, body.urls as string[]);
  }
}

/** GET /api/tasks/TASK/screenshot?run=R&url=U: one kept screenshot (observe/screenshots.ts), as the JPEG it is. */
async function screenshot(c: Ctx, task: string, url: URL): Promise<void> {
  const run = url.searchParams.get('run');
  const page = url.searchParams.get('url');
  if (!run || !page) throw new HttpError(400, 'a screenshot is asked for with ?run=RUN&url=PAGE_URL');
  const shot = await readScreenshot(c.o.redis, task, run, page);
  if (!shot)
    throw new HttpError(
      404,
      `no screenshot of ${page.slice(0, 200)} kept in run ${run.slice(0, 80)} of '${task}' (a run keeps its newest 50, for a week)`,
    );
  c.res.statusCode = 200;
  c.res.setHeader('content-type', 'image/jpeg');
  // The page asks with the capture's time in the address (&at=): a newer capture is a new address, so this one may be cached.
  c.res.setHeader('cache-control', 'private, max-age=86400');
  c.res.end(c.req.method === 'HEAD' ? undefined : shot.jpeg);
}

async function changesFeedOr404(c: Ctx, segment: string, url: URL): Promise<string> {
  const task = await knownTask(c, segment);
  try {
    return await changesFeed(c.o.redis, task, `http://${c.req.headers.host ?? 'localhost'}${url.pathname}`);
  } catch (err) {
    throw err instanceof FeedError ? new HttpError(err.status, err.message) : err;
  }
}

async function knownTask(c: Ctx, segment: string): Promise<string> {
  let name: string;
  try {
    name = decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, 'a task name in the path must be URL-encoded');
  }
  if (!(await c.views.isTask(name))) throw new HttpError(404, `no task '${name.slice(0, 100)}' on this Redis`);
  return name;
}

async function healthcheck(c: Ctx): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>(
    (_, reject) =>
      (timer = setTimeout(
        () => reject(new Error(`Redis did not answer PING within ${HEALTH_TIMEOUT_MS} ms`)),
        HEALTH_TIMEOUT_MS,
      )),
  );
  try {
    redisReachable(c);
    await Promise.race([c.o.redis.ping(), timeout]);
    sendText(c.res, 200, 'text/plain; charset=utf-8', 'ok\n');
  } catch (err) {
    sendText(
      c.res,
      503,
      'text/plain; charset=utf-8',
      `${err instanceof RedisUnavailable ? err.message : `Redis unavailable: ${err instanceof Error ? err.message : String(err)}`}\n`,
    );
  } finally {
    clearTimeout(timer);
  }
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const type = String(req.headers['content-type'] ?? '');
  let text = '';
  for await (const chunk of req) {
    text += chunk;
    if (text.length > MAX_BODY) throw new HttpError(413, `a request body is at most ${MAX_BODY} bytes`);
  }
  if (text.trim() === '') return {};
  if (!/^application\/json\b/i.test(type)) throw new HttpError(415, 'send the body as application/json');
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // answered below
  }
  throw new HttpError(400, 'the body must be a JSON object');
}

function securityHeaders(res: ServerResponse): void {
  res.setHeader('content-security-policy', CSP);
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('referrer-policy', 'no-referrer');
  res.setHeader('cache-control', 'no-store');
  res.setHeader('cross-origin-resource-policy', 'same-origin');
}

function send(res: ServerResponse, status: number, body: unknown): void {
  sendText(res, status, 'application/json; charset=utf-8', JSON.stringify(body));
}

function sendText(res: ServerResponse, status: number, type: string, body: string): void {
  res.statusCode = status;
  res.setHeader('content-type', type);
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
