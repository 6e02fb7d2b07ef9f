import * as vscode from 'vscode';
import { isWorkerGone, readWorkers, type WorkerBeat } from '../../frontier/fleet';
import { pagesFinishedBy, WORKER_RATE_WINDOW, WorkerRates, workerSeen } from '../../observe/workerRates';
import type { RedisConnection } from '../redisConnection';
import type { TrackedWorker, WorkerManager } from './workerManager';

// The Workers view: local worker processes, and remote ones (other machines, other editors) from the
// heartbeats every worker keeps in Redis, with their throughput and last-seen time.

export type WorkerNode =
  | { kind: 'local'; worker: TrackedWorker; beat: WorkerBeat | null; rate: number }
  | { kind: 'remote'; beat: WorkerBeat; rate: number };

export class WorkerTreeProvider implements vscode.TreeDataProvider<WorkerNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private beats = new Map<string, WorkerBeat>();
  /** Each worker's pages/s, counted as the status bar counts them (observe/workerRates.ts). */
  private readonly rates = new WorkerRates();
  private readonly rateOf = new Map<string, number>();
  private timer: NodeJS.Timeout;

  constructor(
    private readonly manager: WorkerManager,
    private readonly connection: RedisConnection,
  ) {
    manager.onDidChange(() => this.changed.fire());
    this.timer = setInterval(() => void this.poll(), 2_000);
  }

  private async poll(): Promise<void> {
    const redis = this.connection.peek();
    if (!redis) return;
    try {
      const now = Date.now();
      const next = new Map<string, WorkerBeat>();
      for (const b of await readWorkers(redis)) {
        if (isWorkerGone(b, now)) continue;
        next.set(b.id, b);
        this.rateOf.set(b.id, this.rates.rate(b) ?? 0);
      }
      this.rates.keep(next.keys());
      for (const id of this.rateOf.keys()) if (!next.has(id)) this.rateOf.delete(id);
      // Re-drawn at every poll while a remote worker is listed, not only when a beat changed: its "seen N ago"
      // froze at "11s" beside the dashboard's "1m0s" once it stopped beating (issue 32, item 3).
      const changed =
        JSON.stringify([...next]) !== JSON.stringify([...this.beats]) ||
        [...next.values()].some((b) => !this.isLocal(b));
      this.beats = next;
      if (changed) this.changed.fire();
    } catch {
      // Connection trouble shows in the Queue Explorer.
    }
  }

  private isLocal(b: WorkerBeat): boolean {
    return this.manager.list().some((w) => w.pid === b.pid);
  }

  getChildren(node?: WorkerNode): WorkerNode[] {
    if (node) return [];
    const local = this.manager.list();
    const localIds = new Set<string>();
    const out: WorkerNode[] = local.map((w) => {
      const beat = [...this.beats.values()].find((b) => b.pid === w.pid) ?? null;
      if (beat) localIds.add(beat.id);
      return { kind: 'local', worker: w, beat, rate: beat ? (this.rateOf.get(beat.id) ?? 0) : 0 };
    });
    for (const b of this.beats.values())
      if (!localIds.has(b.id)) out.push({ kind: 'remote', beat: b, rate: this.rateOf.get(b.id) ?? 0 });
    return out;
  }

  getTreeItem(node: WorkerNode): vscode.TreeItem {
    const uptime = (started: number) => formatAge(Date.now() - started);
    if (node.kind === 'local') {
      const w = node.worker;
      const item = new vscode.TreeItem(`PID ${w.pid}`, vscode.TreeItemCollapsibleState.None);
      item.id = `worker/${w.pid}`;
      // `.autoscaled`: it takes a resize (crawlStudio.resizeWorker).
      item.contextValue = node.beat?.autoscale ? 'worker.local.autoscaled' : 'worker.local';
      // An autoscaled worker's concurrency now is in its heartbeat; what it started with is in `w`.
      const concurrency = node.beat?.concurrency ?? w.concurrency;
      item.description = `${w.pool.label} · ×${concurrency} · ${node.rate.toFixed(1)} p/s · up ${uptime(w.startedAt)}`;
      item.tooltip = `Local worker ${w.pid}\nTasks: ${w.taskFiles.join(', ')}\nConcurrency: ${concurrency}${scaleText(node.beat)}\n${finishedText(node.beat)}\n${RATE_TEXT}${warningText(node.beat)}`;
      item.iconPath = warned(node.beat) ?? new vscode.ThemeIcon('server-process');
      item.command = { command: 'crawlStudio.showWorkerLog', title: 'Show Log', arguments: [node] };
      return item;
    }
    const b = node.beat;
    const item = new vscode.TreeItem(`${b.host} PID ${b.pid}`, vscode.TreeItemCollapsibleState.None);
    item.id = `worker/remote/${b.id}`;
    item.contextValue = b.autoscale ? 'worker.remote.autoscaled' : 'worker.remote';
    // Last seen as the dashboard and the monitor say it (observe/workerRates.ts workerSeen).
    const seen = workerSeen(b, Date.now());
    item.description = `${b.tasks.join(', ')} · ×${b.concurrency} · ${node.rate.toFixed(1)} p/s · ${seen.state === 'live' ? '' : 'silent, '}seen ${formatAge(seen.lastSeenAgoMs)} ago`;
    item.tooltip = `Worker ${b.pid} on ${b.host}\nTasks: ${b.tasks.join(', ')}\nConcurrency: ${b.concurrency}${scaleText(b)}\n${finishedText(b)}\n${RATE_TEXT}${warningText(b)}`;
    item.iconPath = warned(b) ?? new vscode.ThemeIcon('remote');
    return item;
  }

  dispose(): void {
    clearInterval(this.timer);
    this.changed.dispose();
  }
}

/** What the worker warns of (its heartbeat's warnings: a task file that differs from its run's), for the tooltip. */
function warningText(beat: WorkerBeat | null): string {
  return (beat?.warnings ?? []).map((w) => `\n⚠ ${w}`).join('');
}

/** A worker that warns of something shows the warning icon, as `status` and the monitor print the warning. */
function warned(beat: WorkerBeat | null): vscode.ThemeIcon | null {
  return beat?.warnings?.length
    ? new vscode.ThemeIcon('warning', new vscode.ThemeColor('list.warningForeground'))
    : null;
}

/** The pages behind the rate: p/s counts pages finished, as the status bar's does. */
function finishedText(beat: WorkerBeat | null): string {
  if (!beat) return 'Pages finished: none reported yet';
  return `Pages finished: ${pagesFinishedBy(beat)} (${beat.processed} fetched or skipped, ${beat.failed} failed)`;
}

/** Its p/s's window, named: a worker's rate is not over the task's window (the dashboard's and status bar's). */
const RATE_TEXT = `p/s: pages finished ${WORKER_RATE_WINDOW}`;

/** As the dashboard writes a duration ("1m 0s"), so one age reads the same in both. */
function formatAge(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

/** An autoscaled worker's range and last decision with its reason (frontier/fleet.ts AutoscaleBeat). */
function scaleText(beat: WorkerBeat | null): string {
  const a = beat?.autoscale;
  if (!a) return '';
  return ` (autoscaled ${a.min}..${a.max}, peak ${a.peak})${a.last ? `\nLast change: ${a.last.reason}` : ''}`;
}
