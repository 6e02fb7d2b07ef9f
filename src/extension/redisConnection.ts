import type { Redis } from '../redis/connect';
import * as vscode from 'vscode';
import { redactUrl } from '../core/url/redact';
import { joinPasswords, splitPasswords } from '../core/url/redisTarget';
import { engine } from './lazy';
import { RedisNotFoundError, startManagedRedis, type ManagedRedis } from '../redis/server';
import { PRIVATE_REDIS_DIR_ENV } from '../redis/serverOwners';
import { requireTrust, settings } from './settings';

// The extension's one Redis: the `crawlStudio.redisUrl` setting (a redis://, redis+sentinel:// or redis+cluster://
// target; its passwords in SecretStorage, never in settings), or a managed redis-server with its data in the workspace storage, started when first needed. The
// connection reconnects by itself; its state drives the explorer's warning node. A managed server that dies is
// started again on the same port with the same data, so every client and worker reconnects to it by itself.

export type ConnectionState =
  | { readonly kind: 'idle' }
  | { readonly kind: 'connecting'; readonly url: string }
  | { readonly kind: 'ready'; readonly url: string; readonly managed: boolean }
  | { readonly kind: 'lost'; readonly url: string; readonly error: string }
  | { readonly kind: 'failed'; readonly error: string };

const SECRET_KEY = 'crawlStudio.redisPassword';
/** The sentinels' own password, for a redis+sentinel:// target whose sentinels require one. */
const SENTINEL_SECRET_KEY = 'crawlStudio.redisSentinelPassword';

/** A managed server that keeps dying is not restarted forever: at most this many times a minute. */
const MAX_RESTARTS_PER_MINUTE = 3;

export class RedisConnection implements vscode.Disposable {
  private client: Redis | null = null;
  private managed: ManagedRedis | null = null;
  private url: string | null = null;
  private connecting: Promise<Redis> | null = null;
  private stateValue: ConnectionState = { kind: 'idle' };
  private restarts: number[] = [];
  private readonly changed = new vscode.EventEmitter<ConnectionState>();
  readonly onDidChangeState = this.changed.event;

  constructor(private readonly context: vscode.ExtensionContext) {}

  get state(): ConnectionState {
    return this.stateValue;
  }

  /** The URL workers should use (with the password, for child processes only; never logged). */
  get workerUrl(): string | null {
    return this.url;
  }

  private setState(s: ConnectionState): void {
    this.stateValue = s;
    this.changed.fire(s);
  }

  /** Connects on first use; later calls share the connection. */
  async get(): Promise<Redis> {
    if (this.client) return this.client;
    this.connecting ??= this.connect().finally(() => (this.connecting = null));
    return this.connecting;
  }

  /** The managed redis-server in use (pid and URL), or null; for the Workers view and tests. */
  get managedServer(): { readonly pid: number; readonly url: string } | null {
    return this.managed ? { pid: this.managed.pid, url: this.managed.url } : null;
  }

  /** Connected already? Does not start anything. */
  peek(): Redis | null {
    return this.client;
  }

  private async connect(): Promise<Redis> {
    try {
      const url = await this.resolveUrl();
      this.url = url;
      this.setState({ kind: 'connecting', url: redactUrl(url) });
      const { connectRedis, checkDatabase } = await engine();
      // ioredis goes on in database 0 when Redis refuses the one named: the views would show another crawl's keys.
      await checkDatabase(url);
      const client = connectRedis(url, { lazyConnect: true, connectionName: 'crawl-studio-vscode' });
      client.on('ready', () => this.setState({ kind: 'ready', url: redactUrl(url), managed: this.managed !== null }));
      client.on('error', (err: Error) => {
        if (this.stateValue.kind !== 'lost') this.setState({ kind: 'lost', url: redactUrl(url), error: err.message });
      });
      client.on('end', () => this.setState({ kind: 'lost', url: redactUrl(url), error: 'connection closed' }));
      await client.connect();
      this.client = client;
      this.setState({ kind: 'ready', url: redactUrl(url), managed: this.managed !== null });
      return client;
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      this.setState({ kind: 'failed', error });
      throw err;
    }
  }

  private async resolveUrl(): Promise<string> {
    const configured = settings.redisUrl();
    if (configured) {
      const [password, sentinelPassword] = await Promise.all([
        this.context.secrets.get(SECRET_KEY),
        this.context.secrets.get(SENTINEL_SECRET_KEY),
      ]);
      return joinPasswords(configured, { password, sentinelPassword });
    }
    requireTrust(
      'Crawl Studio does not start a Redis server in an untrusted workspace. Trust the workspace, or set crawlStudio.redisUrl in your user settings.',
    );
    this.managed = await this.startManaged();
    return this.managed.url;
  }

  private async startManaged(): Promise<ManagedRedis> {
    const base = this.context.storageUri ?? this.context.globalStorageUri;
    const dataDir = vscode.Uri.joinPath(base, 'redis').fsPath;
    const m = await startManagedRedis({ dataDir, binary: settings.redisServerPath() || undefined });
    // The workers this window starts inherit it, and keep the server up until they finished their pages.
    process.env[PRIVATE_REDIS_DIR_ENV] = dataDir;
    void m.exited.then((how) => this.onManagedExit(m, how));
    return m;
  }

  /** The managed server died under us (killed, crashed, out of memory): start it again where it was. */
  private async onManagedExit(m: ManagedRedis, how: { code: number | null; signal: string | null }): Promise<void> {
    if (this.managed !== m) return; // stopped on purpose (reset, dispose), or already replaced
    const why = how.signal ?? `exit code ${how.code}`;
    const now = Date.now();
    this.restarts = [...this.restarts.filter((t) => now - t < 60_000), now];
    if (this.restarts.length > MAX_RESTARTS_PER_MINUTE) {
      this.managed = null;
      this.setState({ kind: 'failed', error: `the managed redis-server keeps stopping (${why})` });
      void vscode.window
        .showErrorMessage(
          `Crawl Studio: the managed redis-server stopped ${this.restarts.length} times within a minute (last: ${why}); it is not restarted again. Check its data folder and memory, then run Start Managed Redis.`,
          'Start Managed Redis',
        )
        .then((a) => a && vscode.commands.executeCommand('crawlStudio.startManagedRedis'));
      return;
    }
    try {
      const next = await this.startManaged();
      if (this.managed !== m) {
        await next.stop();
        return;
      }
      this.managed = next;
      // Same port, same data: the client (and every worker) reconnects by itself.
      void vscode.window.showWarningMessage(
        `Crawl Studio: the managed redis-server stopped (${why}) and was started again on ${redactUrl(next.url)} with its data; crawls carry on.`,
      );
    } catch (err) {
      this.managed = null;
      this.setState({
        kind: 'failed',
        error: `the managed redis-server stopped (${why}) and could not be started again: ${(err as Error).message}`,
      });
    }
  }

  /**
   * Connects to a Redis target from now on: the target without its passwords goes to the setting; its passwords (in
   * the text, or given apart) to SecretStorage.
   */
  async configure(
    url: string,
    given: { password?: string; sentinelPassword?: string },
    target: vscode.ConfigurationTarget,
  ): Promise<void> {
    const { target: text, passwords } = splitPasswords(url);
    const password = passwords.password ?? given.password;
    const sentinelPassword = passwords.sentinelPassword ?? given.sentinelPassword;
    for (const [key, value] of [
      [SECRET_KEY, password],
      [SENTINEL_SECRET_KEY, sentinelPassword],
    ] as const) {
      if (value) await this.context.secrets.store(key, value);
      else await this.context.secrets.delete(key);
    }
    await vscode.workspace.getConfiguration('crawlStudio').update('redisUrl', text, target);
    await this.reset();
    await this.get();
  }

  /** Drops the connection (and a managed server nobody needs); the next get() connects again. */
  async reset(): Promise<void> {
    this.client?.disconnect();
    this.client = null;
    this.url = null;
    const m = this.managed;
    this.managed = null;
    delete process.env[PRIVATE_REDIS_DIR_ENV];
    await m?.stop();
    this.setState({ kind: 'idle' });
  }

  dispose(): void {
    this.client?.disconnect();
    const m = this.managed;
    this.managed = null;
    void m?.stop();
    this.changed.dispose();
  }
}

export function describeConnectionError(err: unknown): { message: string; actions: string[] } {
  if (err instanceof RedisNotFoundError) {
    return {
      message:
        'Crawl Studio needs Redis: redis-server was not found. Install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis) or connect to a Redis URL.',
      actions: ['Connect to Redis…', 'Set redis-server Path'],
    };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { message: `Crawl Studio cannot reach Redis: ${message}`, actions: ['Connect to Redis…'] };
}
