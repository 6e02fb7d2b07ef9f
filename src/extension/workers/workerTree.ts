import * as vscode from 'vscode';
import { isWorkerGone, readWorkers, type WorkerBeat } from '../../frontier/fleet';
import type { RedisConnection } from '../redisConnection';
import type { TrackedWorker, WorkerManager } from './workerManager';

// The Workers view: local worker processes, and remote ones (other machines, other editors) from the
// heartbeats every worker keeps in Redis, with their throughput and last-seen time.

export type WorkerNode = { kind: 'local'; worker: TrackedWorker; beat: WorkerBeat | null; rate: number } | { kind: 'remote'; beat: WorkerBeat; rate: number };

export class WorkerTreeProvider implements vscode.TreeDataProvider<WorkerNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private beats = new Map<string, WorkerBeat>();
  private readonly rates = new Map<string, { processed: number; at: number; rate: number }>();
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
        const id = b.id;
        next.set(id, b);
        const prev = this.rates.get(id);
        const rate = prev && b.lastSeen > prev.at ? ((b.processed - prev.processed) * 1000) / (b.lastSeen - prev.at) : (prev?.rate ?? 0);
        if (!prev || b.lastSeen > prev.at) this.rates.set(id, { processed: b.processed, at: b.lastSeen, rate });
      }
      const changed = JSON.stringify([...next]) !== JSON.stringify([...this.beats]);
      this.beats = next;
      if (changed) this.changed.fire();
    } catch {
      // Connection trouble shows in the Queue Explorer.
    }
  }

  getChildren(node?: WorkerNode): WorkerNode[] {
    if (node) return [];
    const local = this.manager.list();
    const localIds = new Set<string>();
    const out: WorkerNode[] = local.map((w) => {
      const beat = [...this.beats.values()].find((b) => b.pid === w.pid) ?? null;
      if (beat) localIds.add(beat.id);
      return { kind: 'local', worker: w, beat, rate: beat ? (this.rates.get(beat.id)?.rate ?? 0) : 0 };
    });
    for (const b of this.beats.values()) if (!localIds.has(b.id)) out.push({ kind: 'remote', beat: b, rate: this.rates.get(b.id)?.rate ?? 0 });
    return out;
  }

  getTreeItem(node: WorkerNode): vscode.TreeItem {
    const uptime = (started: number) => formatAge(Date.now() - started);
    if (node.kind === 'local') {
      const w = node.worker;
      const item = new vscode.TreeItem(`PID ${w.pid}`, vscode.TreeItemCollapsibleState.None);
      item.id = `worker/${w.pid}`;
      item.contextValue = 'worker.local';
      item.description = `${w.pool.label} · ×${w.concurrency} · ${node.rate.toFixed(1)} jobs/s · up ${uptime(w.startedAt)}`;
      item.tooltip = `Local worker ${w.pid}\nTasks: ${w.taskFiles.join(', ')}\nConcurrency: ${w.concurrency}\nProcessed: ${node.beat?.processed ?? 0}`;
      item.iconPath = new vscode.ThemeIcon('server-process');
      item.command = { command: 'crawlStudio.showWorkerLog', title: 'Show Log', arguments: [node] };
      return item;
    }
    const b = node.beat;
    const item = new vscode.TreeItem(`${b.host} PID ${b.pid}`, vscode.TreeItemCollapsibleState.None);
    item.id = `worker/remote/${b.id}`;
    item.contextValue = 'worker.remote';
    item.description = `${b.tasks.join(', ')} · ×${b.concurrency} · ${node.rate.toFixed(1)} jobs/s · seen ${formatAge(Date.now() - b.lastSeen)} ago`;
    item.iconPath = new vscode.ThemeIcon('remote');
    return item;
  }

  dispose(): void {
    clearInterval(this.timer);
    this.changed.dispose();
  }
}

function formatAge(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}
