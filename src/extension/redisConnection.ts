import type { Redis } from 'ioredis';
import * as vscode from 'vscode';
import { redactUrl } from '../core/url/redact';
import { engine } from './lazy';
import { RedisNotFoundError, startManagedRedis, type ManagedRedis } from '../redis/server';
import { requireTrust, settings } from './settings';

// The extension's one Redis: the `crawlStudio.redisUrl` setting (its password in SecretStorage, never in
// settings), or a managed redis-server with its data in the workspace storage, started when first needed. The
// connection reconnects by itself; its state drives the explorer's warning node.

export type ConnectionState =
  | { readonly kind: 'idle' }
  | { readonly kind: 'connecting'; readonly url: string }
  | { readonly kind: 'ready'; readonly url: string; readonly managed: boolean }
  | { readonly kind: 'lost'; readonly url: string; readonly error: string }
  | { readonly kind: 'failed'; readonly error: string };

const SECRET_KEY = 'crawlStudio.redisPassword';

export class RedisConnection implements vscode.Disposable {
  private client: Redis | null = null;
  private managed: ManagedRedis | null = null;
  private url: string | null = null;
  private connecting: Promise<Redis> | null = null;
  private stateValue: ConnectionState = { kind: 'idle' };
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

  /** Connected already? Does not start anything. */
  peek(): Redis | null {
    return this.client;
  }

  private async connect(): Promise<Redis> {
    try {
      const url = await this.resolveUrl();
      this.url = url;
      this.setState({ kind: 'connecting', url: redactUrl(url) });
      const { connectRedis } = await engine();
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
      const password = await this.context.secrets.get(SECRET_KEY);
      if (!password) return configured;
      const u = new URL(configured);
      u.password = password;
      return u.toString();
    }
    requireTrust('Crawl Studio does not start a Redis server in an untrusted workspace. Trust the workspace, or set crawlStudio.redisUrl in your user settings.');
    const base = this.context.storageUri ?? this.context.globalStorageUri;
    this.managed = await startManagedRedis({
      dataDir: vscode.Uri.joinPath(base, 'redis').fsPath,
      binary: settings.redisServerPath() || undefined,
    });
    return this.managed.url;
  }

  /** Asks for a Redis URL (and password, kept in SecretStorage) and reconnects to it. */
  async configure(url: string, password: string | undefined, target: vscode.ConfigurationTarget): Promise<void> {
    const u = new URL(url);
    if (u.password) {
      password = decodeURIComponent(u.password);
      u.password = '';
    }
    if (password) await this.context.secrets.store(SECRET_KEY, password);
    else await this.context.secrets.delete(SECRET_KEY);
    await vscode.workspace.getConfiguration('crawlStudio').update('redisUrl', u.toString(), target);
    await this.reset();
    await this.get();
  }

  /** Drops the connection (and a managed server nobody needs); the next get() connects again. */
  async reset(): Promise<void> {
    this.client?.disconnect();
    this.client = null;
    this.url = null;
    await this.managed?.stop();
    this.managed = null;
    this.setState({ kind: 'idle' });
  }

  dispose(): void {
    this.client?.disconnect();
    void this.managed?.stop();
    this.changed.dispose();
  }
}

export function describeConnectionError(err: unknown): { message: string; actions: string[] } {
  if (err instanceof RedisNotFoundError) {
    return { message: 'Crawl Studio needs Redis: redis-server was not found. Install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis) or connect to a Redis URL.', actions: ['Connect to Redis…', 'Set redis-server Path'] };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { message: `Crawl Studio cannot reach Redis: ${message}`, actions: ['Connect to Redis…'] };
}
