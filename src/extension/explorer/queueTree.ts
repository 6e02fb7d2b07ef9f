import * as vscode from 'vscode';
import { hostOf } from '../../core/url/hosts';
import type { RedisConnection } from '../redisConnection';
import { engine } from '../lazy';
import { TASK_GLOB } from '../taskFiles';
import { JOB_STATES } from './jobStates';
import type { QueueModel } from './queueModel';
import {
  ConnectionNode,
  JobNode,
  MoreNode,
  NoticeNode,
  PAGE_SIZE,
  QueueNode,
  StateNode,
  TaskFileNode,
  type ExplorerNode,
} from './nodes';
import { queueItem, treeItemOf } from './treeItems';

// The Queue Explorer: connection -> task queues -> job states -> jobs. Nodes are kept and updated in place and
// carry stable ids, so a refresh re-renders only what changed and never collapses what the user expanded.

export class QueueTreeProvider implements vscode.TreeDataProvider<ExplorerNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<ExplorerNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private model: QueueModel | null = null;
  private readonly root = new ConnectionNode();
  private queues = new Map<string, QueueNode>();
  private states = new Map<string, StateNode>();
  private readonly expanded = new Set<StateNode>();
  private timer: NodeJS.Timeout | null = null;
  /** Marks the counts stale when reads stop succeeding (a hung or lost Redis: issue 23, item 2). */
  private watchdog: NodeJS.Timeout | null = null;
  private lastReadAt = 0;
  private readStartedAt: number | null = null;
  private staleSince: number | null = null;
  /** The read of Redis under way, and the one queued behind it (see refresh()). */
  private reading: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  private error: string | null = null;
  private readonly disposables: vscode.Disposable[] = [];
  /** getChildren calls not yet answered, and the changes held back meanwhile (see notify()). */
  private fetching = 0;
  private held: Set<ExplorerNode> | 'all' | null = null;
  /** Groups whose rows VS Code is fetching now: the answer carries every read of them that ends meanwhile. */
  private readonly listing = new Set<StateNode>();
  /** Per group, the read of its jobs under way: reads of one group never overlap. */
  private readonly jobReads = new Map<StateNode, Promise<void>>();
  /** The workspace's task files by URI, re-read when one is created, changed or deleted. */
  private taskFiles = new Map<string, TaskFileNode>();
  private taskFilesRead: Promise<void> | null = null;
  /** The first read of the task files has ended (until then, "none" is not known). */
  private taskFilesKnown = false;

  constructor(
    private readonly connection: RedisConnection,
    private readonly intervalMs: () => number,
  ) {
    // Task files appear in the tree before they ever ran (issue 23, item 9), so the watcher keeps the list current.
    const watcher = vscode.workspace.createFileSystemWatcher(TASK_GLOB);
    // Debounced, and the tree is refreshed only when the list of rows really changed: a root refresh re-registers
    // every row, and a context menu open on one of them would then run its command on nothing.
    let pending: NodeJS.Timeout | null = null;
    const rescan = () => {
      if (pending) clearTimeout(pending);
      pending = setTimeout(() => {
        pending = null;
        this.taskFilesRead = null;
        void this.readTaskFiles();
      }, 300);
    };
    this.disposables.push(
      watcher,
      watcher.onDidCreate(rescan),
      watcher.onDidChange(rescan),
      watcher.onDidDelete(rescan),
    );
    this.disposables.push(
      connection.onDidChangeState((s) => {
        // A reset (new URL, managed server) replaces the client: the model must not keep reading the old one.
        if (s.kind === 'idle' || s.kind === 'connecting') {
          void this.model?.close();
          this.model = null;
          this.queues.clear();
          this.states.clear();
          this.expanded.clear();
        }
        this.notify(undefined);
      }),
    );
  }

  /**
   * Announces a change, but never while VS Code is still waiting for children: a change event for an element whose
   * children are being fetched makes VS Code fetch them a second time, and when both answers arrive it registers
   * the same ids twice ("Element with id job/<task>/failed/<id> is already registered", issue 23 item 3). Changes
   * made meanwhile are announced, once each, as soon as the last pending getChildren has answered.
   */
  private notify(node: ExplorerNode | undefined): void {
    if (this.fetching === 0) {
      this.changed.fire(node);
      return;
    }
    if (node === undefined) this.held = 'all';
    else if (this.held !== 'all') {
      this.held ??= new Set();
      this.held.add(node);
    }
  }

  private flushHeld(): void {
    const held = this.held;
    this.held = null;
    if (held === 'all') this.changed.fire(undefined);
    else if (held) for (const n of held) this.changed.fire(n);
  }

  attach(view: vscode.TreeView<ExplorerNode>): void {
    this.disposables.push(
      view.onDidExpandElement((e) => {
        // Its rows are read by the getChildren that expanding it calls: a read of its own here could end
        // before that call and announce a change VS Code would cross with its answer (see listing).
        if (e.element instanceof StateNode) this.expanded.add(e.element);
      }),
      view.onDidCollapseElement((e) => {
        if (e.element instanceof StateNode) this.expanded.delete(e.element);
      }),
      view.onDidChangeVisibility((e) => (e.visible ? this.startPolling() : this.stopPolling())),
    );
    if (view.visible) this.startPolling();
  }

  startPolling(): void {
    this.watchdog ??= setInterval(() => this.checkStale(), 1_000);
    if (this.timer) return;
    const tick = () =>
      void this.refresh().then(() => {
        this.timer = setTimeout(tick, this.intervalMs());
      });
    this.timer = setTimeout(tick, 0);
  }

  stopPolling(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = null;
  }

  /** True while the counts shown are older than a few polls (Redis not answering, or the connection lost). */
  get isStale(): boolean {
    return this.staleSince !== null;
  }

  private checkStale(): void {
    const lost = this.connection.state.kind === 'lost';
    // A read that has not answered for a few polls: Redis is hung or unreachable (ioredis queues commands
    // while it reconnects, so nothing fails yet).
    const late =
      this.readStartedAt !== null && Date.now() - this.readStartedAt > Math.max(5_000, 3 * this.intervalMs());
    const stale = this.queues.size > 0 && (lost || late);
    if (stale === this.isStale) return;
    this.staleSince = stale ? this.lastReadAt || Date.now() : null;
    // Only the queue rows change: a whole-tree refresh would re-register every row under an open context menu.
    for (const q of this.queues.values()) this.notify(q);
    if (stale) {
      const url = 'url' in this.connection.state ? ` at ${this.connection.state.url}` : '';
      void vscode.window.showWarningMessage(
        `Crawl Studio: Redis${url} is not answering. The Queue Explorer shows the counts last read and marks them stale; it updates by itself when Redis is back.`,
      );
    }
  }

  /**
   * Re-reads Redis and fires change events for the nodes whose contents changed. A call made while a read is
   * under way resolves after the next read, which starts when that one ends: a read begun before an action (retry,
   * pause, enqueue) may miss it, and whoever refreshes after one must see it. Calls meanwhile share that read.
   */
  refresh(): Promise<void> {
    if (!this.reading) return this.startReading();
    const next = () => {
      this.queued = null;
      return this.startReading();
    };
    // After the read under way however it ended: a queued read must never be stuck behind a failed one.
    this.queued ??= this.reading.then(next, next);
    return this.queued;
  }

  private startReading(): Promise<void> {
    this.readStartedAt = Date.now();
    this.reading = this.read().finally(() => {
      this.reading = null;
      this.readStartedAt = null;
    });
    return this.reading;
  }

  private async read(): Promise<void> {
    try {
      const redis = this.connection.peek();
      if (!redis) return;
      this.model ??= new (await engine()).QueueModel(redis);
      const names = await this.model.taskNames();
      // The first read decides between the tree and the welcome content: announced even when it finds nothing.
      let structural =
        names.length !== this.queues.size ||
        names.some((n) => !this.queues.has(n)) ||
        this.error !== null ||
        this.lastReadAt === 0;
      this.error = null;
      const next = new Map<string, QueueNode>();
      for (const name of names) {
        const snap = await this.model.snapshot(name);
        const node = this.queues.get(name);
        if (node) {
          // Only rows whose rendering changed are announced. VS Code re-reads a changed node's whole subtree, and
          // until it has, a context-menu command on a row below it gets no element: a poll that announced the
          // queue every time made Retry Job on a failed row fail on a busy machine.
          const row = this.queueRow(node);
          const counts = node.snapshot.counts;
          node.snapshot = snap;
          if (this.queueRow(node) !== row) this.notify(node);
          else {
            for (const s of JOB_STATES) {
              const st = this.states.get(`${name}/${s}`);
              if (st && counts[s] !== snap.counts[s]) this.notify(st);
            }
          }
          next.set(name, node);
        } else {
          next.set(name, new QueueNode(name, snap));
          structural = true;
        }
      }
      this.queues = next;
      this.lastReadAt = Date.now();
      if (this.staleSince !== null) {
        this.staleSince = null;
        for (const q of next.values()) this.notify(q);
      }
      if (structural) this.notify(undefined);
      for (const st of this.expanded) if (this.queues.has(st.queue.name)) await this.refreshJobs(st);
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      if (msg !== this.error) {
        this.error = msg;
        this.notify(undefined);
      }
    }
  }

  /**
   * `announce`: fire a change for the group when its rows changed. Not when getChildren reads them for its own
   * answer: announcing that made VS Code fetch the rows a second time right after showing them.
   */
  private refreshJobs(st: StateNode, announce = true): Promise<void> {
    // Chained: two reads of one group racing (expand, the poll, an action's refresh) could answer out of order.
    const before = this.jobReads.get(st) ?? Promise.resolve();
    const read = before
      .then(() => this.readJobs(st, announce))
      .finally(() => {
        if (this.jobReads.get(st) === read) this.jobReads.delete(st);
      });
    this.jobReads.set(st, read);
    return read;
  }

  private async readJobs(st: StateNode, announce: boolean): Promise<void> {
    if (!this.model) return;
    // One row per job id: a job moving between BullMQ's lists while they are read may be listed twice.
    const seen = new Set<string | undefined>();
    const jobs = (await this.model.jobs(st.queue.name, st.state, 0, st.limit)).filter(
      (j) => !seen.has(j.id) && (seen.add(j.id), true),
    );
    // With its hand retries: a retried page that failed again the same way has the same attempts and reason.
    const sig = (list: { id?: string; attemptsMade: number; failedReason?: string; data?: { retried?: number } }[]) =>
      list.map((j) => `${j.id}:${j.attemptsMade}:${j.failedReason ?? ''}:${j.data?.retried ?? 0}`).join('|');
    if (sig(jobs) === sig(st.jobs.map((n) => n.job))) return;
    st.hosts = new Set(jobs.map((j) => hostOf(j.data?.url ?? ''))).size;
    const byId = new Map(st.jobs.map((n) => [n.job.id, n]));
    st.jobs = jobs.map((j) => {
      const node = byId.get(j.id);
      if (node) {
        node.job = j;
        return node;
      }
      return new JobNode(st, j);
    });
    // Not for a group being listed: its answer has these rows. Announced anyway, the change reached VS Code
    // while it was still showing that answer; it dropped the fresh rows' elements and kept the shown rows, whose
    // context-menu commands then got no element until something else refreshed the group (seen in CI: Retry Job
    // on a just-expanded failed group failed three times, 30 s apart).
    if (announce && !this.listing.has(st)) this.notify(st);
  }

  async loadMore(st: StateNode): Promise<void> {
    st.limit += PAGE_SIZE;
    await this.refreshJobs(st);
  }

  /** Reads the workspace's task files (names and error counts) once per change; callers share a read. */
  readTaskFiles(): Promise<void> {
    this.taskFilesRead ??= (async () => {
      const uris = await vscode.workspace.findFiles(TASK_GLOB, '**/node_modules/**', 200);
      const { parseTask } = await engine();
      const next = new Map<string, TaskFileNode>();
      for (const uri of uris.sort((a, b) => a.fsPath.localeCompare(b.fsPath))) {
        let name: string | null = null;
        let errors: number;
        try {
          const r = parseTask(new TextDecoder().decode(await vscode.workspace.fs.readFile(uri)), uri.fsPath);
          name = r.task?.name ?? null;
          errors = r.diagnostics.filter((d) => d.severity === 'error').length;
        } catch {
          errors = 1;
        }
        const node = this.taskFiles.get(uri.toString()) ?? new TaskFileNode(uri, name, errors);
        node.name = name;
        node.errors = errors;
        next.set(uri.toString(), node);
      }
      const signature = (m: Map<string, TaskFileNode>) =>
        [...m.values()].map((t) => `${t.uri.toString()}\t${t.name}\t${t.errors}`).join('\n');
      const changed = signature(next) !== signature(this.taskFiles) || !this.taskFilesKnown;
      this.taskFiles = next;
      this.taskFilesKnown = true;
      if (changed) this.notify(undefined);
    })().catch(() => undefined);
    return this.taskFilesRead;
  }

  /** Task files whose task has no queue in this Redis (all of them when not connected). */
  unrunTaskFiles(): TaskFileNode[] {
    return [...this.taskFiles.values()].filter((t) => t.name === null || !this.queues.has(t.name));
  }

  queueNodes(): QueueNode[] {
    return [...this.queues.values()];
  }

  getModel(): QueueModel | null {
    return this.model;
  }

  getParent(node: ExplorerNode): ExplorerNode | undefined {
    if (node instanceof QueueNode || node instanceof NoticeNode || node instanceof TaskFileNode) return this.root;
    if (node instanceof StateNode) return node.queue;
    if (node instanceof JobNode || node instanceof MoreNode) return node.parent;
    return undefined;
  }

  async getChildren(node?: ExplorerNode): Promise<ExplorerNode[]> {
    this.fetching++;
    if (node instanceof StateNode) this.listing.add(node);
    try {
      return await this.children(node);
    } finally {
      if (node instanceof StateNode) this.listing.delete(node);
      // After the answer has gone out, not before it: VS Code must have the children before it hears of a change.
      if (--this.fetching === 0 && this.held) setTimeout(() => this.fetching === 0 && this.flushHeld(), 0);
    }
  }

  private async children(node?: ExplorerNode): Promise<ExplorerNode[]> {
    if (!node) {
      // Not connected: no nodes, so the view shows its welcome content (Connect | Start Managed Redis).
      const s = this.connection.state;
      if (s.kind === 'idle' || s.kind === 'failed') return [];
      void this.readTaskFiles();
      // Nothing to list (no queue, no task file): the welcome content offers New Task File and the demo shop
      // (issue 23, item 8), rather than a tree saying "No queues yet".
      const empty =
        s.kind === 'ready' &&
        this.lastReadAt > 0 &&
        this.taskFilesKnown &&
        this.queues.size === 0 &&
        this.taskFiles.size === 0 &&
        !this.error;
      return empty ? [] : [this.root];
    }
    if (node instanceof ConnectionNode) {
      const s = this.connection.state;
      const out: ExplorerNode[] = [];
      if (s.kind === 'lost') out.push(new NoticeNode('lost', 'Connection lost — reconnecting…', s.error, 'warning'));
      if (s.kind === 'failed')
        out.push(
          new NoticeNode('failed', 'Not connected', s.error, 'error', {
            command: 'crawlStudio.connectRedis',
            title: 'Connect',
          }),
        );
      if (s.kind === 'idle')
        out.push(
          new NoticeNode('idle', 'Not connected', 'Connect to Redis or start a crawl', 'plug', {
            command: 'crawlStudio.connectRedis',
            title: 'Connect',
          }),
        );
      if (this.error) out.push(new NoticeNode('error', 'Cannot read queues', this.error, 'warning'));
      // Never awaited here: the rows come from the last read, and a read that changes them refreshes the tree.
      void this.readTaskFiles();
      const unrun = this.unrunTaskFiles();
      return [...out, ...this.queues.values(), ...unrun];
    }
    if (node instanceof QueueNode) {
      return JOB_STATES.map((s) => {
        const key = `${node.name}/${s}`;
        let st = this.states.get(key);
        if (!st || st.queue !== node) {
          st = new StateNode(node, s);
          this.states.set(key, st);
        }
        return st;
      });
    }
    if (node instanceof StateNode) {
      // Read now, after every read of the group under way (see listing): the rows shown are the current ones.
      if (node.count > 0 || node.jobs.length > 0) await this.refreshJobs(node, false);
      const out: ExplorerNode[] = [...node.jobs];
      if (node.count > node.jobs.length && node.jobs.length >= node.limit) out.push(new MoreNode(node));
      return out;
    }
    return [];
  }

  getTreeItem(node: ExplorerNode): vscode.TreeItem {
    return treeItemOf(node, this.connection.state, this.staleSince);
  }

  /** Reads the whole tree again: every row VS Code shows gets a live element (see the job commands' `fresh`). */
  rebuild(): void {
    this.notify(undefined);
    void this.refresh();
  }

  /** What the queue's row shows, to tell whether a read changed it. */
  private queueRow(node: QueueNode): string {
    const item = queueItem(node, this.staleSince);
    const tip = item.tooltip instanceof vscode.MarkdownString ? item.tooltip.value : item.tooltip;
    return JSON.stringify([
      item.description,
      tip,
      item.contextValue,
      item.iconPath instanceof vscode.ThemeIcon ? item.iconPath.id : '',
    ]);
  }

  dispose(): void {
    this.stopPolling();
    void this.model?.close();
    this.changed.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
