import * as vscode from 'vscode';
import { describeRunPhase, phaseWord } from '../../observe/runPhase';
import { describeAttempts, describeQueue, groupLabel, waitingPages } from '../../observe/figures';
import type { ConnectionState } from '../redisConnection';
import type { JobStateName } from './jobStates';
import {
  ConnectionNode,
  JobNode,
  NoticeNode,
  PAGE_SIZE,
  QueueNode,
  StateNode,
  TaskFileNode,
  type ExplorerNode,
  type MoreNode,
} from './nodes';

// How each row of the Queue Explorer looks: its label, description, tooltip, icon, and the context value its menus
// key on. Read from the row and the connection's state only, so a row renders the same however often it is asked.

/**
 * `staleSince`: since when the counts shown are stale (Redis not answering), or null.
 */
export function treeItemOf(node: ExplorerNode, state: ConnectionState, staleSince: number | null): vscode.TreeItem {
  if (node instanceof ConnectionNode) return connectionItem(state);
  if (node instanceof NoticeNode) return noticeItem(node);
  if (node instanceof QueueNode) return queueItem(node, staleSince);
  if (node instanceof TaskFileNode) return taskFileItem(node);
  if (node instanceof StateNode) return stateItem(node);
  if (node instanceof JobNode) return jobItem(node);
  return moreItem(node);
}

function connectionItem(s: ConnectionState): vscode.TreeItem {
  const label = s.kind === 'ready' || s.kind === 'lost' || s.kind === 'connecting' ? s.url : 'Redis';
  const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.Expanded);
  item.id = 'connection';
  item.contextValue = 'connection';
  item.description = s.kind === 'ready' ? (s.managed ? 'managed' : 'connected') : s.kind;
  item.iconPath = new vscode.ThemeIcon(
    s.kind === 'ready' ? 'database' : s.kind === 'lost' ? 'debug-disconnect' : 'plug',
  );
  return item;
}

function noticeItem(node: NoticeNode): vscode.TreeItem {
  const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
  item.id = `notice/${node.id}`;
  item.description = node.detail;
  item.tooltip = node.detail;
  item.iconPath = new vscode.ThemeIcon(node.icon);
  item.command = node.command;
  return item;
}

function taskFileItem(node: TaskFileNode): vscode.TreeItem {
  const label = node.name ?? vscode.workspace.asRelativePath(node.uri);
  const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
  item.id = `taskFile/${node.uri.toString()}`;
  item.resourceUri = node.uri;
  item.contextValue = node.errors > 0 ? 'taskFile.invalid' : 'taskFile';
  item.description = node.errors > 0 ? `${node.errors} error${node.errors === 1 ? '' : 's'}` : 'not run yet';
  item.tooltip = `${vscode.workspace.asRelativePath(node.uri)}: ${node.errors > 0 ? 'fix its errors (Problems panel) to crawl it' : 'no queue yet; Start Crawl runs it'}`;
  item.iconPath = new vscode.ThemeIcon(node.errors > 0 ? 'warning' : 'file-code');
  item.command = { command: 'vscode.open', title: 'Open', arguments: [node.uri] };
  return item;
}

function stateItem(node: StateNode): vscode.TreeItem {
  const item = new vscode.TreeItem(
    groupLabel(node.state),
    node.count > 0 ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
  );
  item.id = `state/${node.queue.name}/${node.state}`;
  item.description = String(node.count);
  item.contextValue = `state.${node.state}`;
  item.iconPath = new vscode.ThemeIcon(STATE_ICONS[node.state]);
  item.tooltip = STATE_TOOLTIPS[node.state];
  return item;
}

function jobItem(node: JobNode): vscode.TreeItem {
  const j = node.job;
  const item = new vscode.TreeItem(
    jobLabel(j.data?.url, node.parent.hosts > 1) ?? `job ${j.id}`,
    vscode.TreeItemCollapsibleState.None,
  );
  item.id = `job/${node.parent.queue.name}/${node.parent.state}/${j.id}`;
  // A page of the frontier is not a job yet: only its URL's actions apply. A stopped run's failed jobs offer no
  // Retry: it would reopen the run, and the engine refuses it (frontier/refused.ts).
  item.contextValue =
    node.parent.state === 'frontier'
      ? 'page.frontier'
      : node.parent.state === 'failed' && node.parent.queue.snapshot.runState === 'stopped'
        ? 'job.failed.over'
        : `job.${node.parent.state}`;
  const attempts = describeAttempts(j.attemptsMade, j.opts.attempts, j.data?.retried);
  const skipped = node.parent.state === 'skipped' ? j.returnvalue?.reason : undefined;
  item.description = skipped
    ? `skipped: ${skipped}`
    : j.failedReason
      ? `${attempts} · ${j.failedReason}`
      : j.data?.rule
        ? `${j.data.rule} · ${attempts}`
        : attempts;
  item.tooltip = new vscode.MarkdownString(
    `\`${j.data?.url}\`\n\nrule **${j.data?.rule}**, depth ${j.data?.depth}, ${attempts}` +
      (j.failedReason ? `\n\nLast error: ${j.failedReason}` : ''),
  );
  item.iconPath = new vscode.ThemeIcon(
    node.parent.state === 'failed' ? 'error' : node.parent.state === 'skipped' ? 'debug-step-over' : 'link',
  );
  return item;
}

function moreItem(node: MoreNode): vscode.TreeItem {
  const item = new vscode.TreeItem(`Load ${PAGE_SIZE} more…`, vscode.TreeItemCollapsibleState.None);
  item.id = `more/${node.parent.queue.name}/${node.parent.state}/${node.parent.limit}`;
  item.command = { command: 'crawlStudio.loadMore', title: 'Load more', arguments: [node] };
  item.iconPath = new vscode.ThemeIcon('ellipsis');
  return item;
}

/** A task's queue: its run's state, its counts in every view's words, and whether they are stale. */
export function queueItem(node: QueueNode, staleSince: number | null): vscode.TreeItem {
  const c = node.snapshot.counts;
  const item = new vscode.TreeItem(node.name, vscode.TreeItemCollapsibleState.Collapsed);
  item.id = `queue/${node.name}`;
  // A stopped run (Stop Crawl) is over: its queue was paused so no worker takes its pages, but Resume would not
  // bring it back (Start Crawl begins a new run), so it offers neither Pause nor Resume.
  const stopped = node.snapshot.runState === 'stopped';
  // Interrupted: nobody drives the run any more (its window reloaded, its `run` was killed): Start Crawl resumes
  // it, Stop Crawl ends it (issue 32, item 2).
  const interrupted = node.snapshot.phase.kind === 'interrupted';
  item.contextValue = stopped
    ? 'queue.stopped'
    : node.snapshot.paused
      ? 'queue.paused'
      : interrupted
        ? 'queue.interrupted'
        : 'queue';
  // The queue in the words the status bar's tooltip and the dashboard use (observe/taskStatus.ts describeQueue),
  // the pages waiting in the frontier among the waiting.
  const parts = [describeQueue(c)];
  if (c.failed) parts.push(`${c.failed} failed`);
  if (c.skipped) parts.push(`${c.skipped} skipped`);
  const stale = staleSince !== null;
  item.description = `${stale ? 'stale · ' : ''}${stopped ? 'stopped · ' : node.snapshot.paused ? 'paused · ' : interrupted ? 'interrupted · ' : ''}${parts.join(' · ')}`;
  const s = node.snapshot.stats;
  item.tooltip = new vscode.MarkdownString(
    (stale ? `*Counts read ${Math.round((Date.now() - staleSince) / 1000)} s ago: Redis is not answering.*\n\n` : '') +
      `**${node.name}** — run ${node.snapshot.run ?? '–'} (${phaseWord(node.snapshot.phase)})\n\n${describeRunPhase(node.snapshot.phase)}\n\n` +
      `${waitingPages(c)} waiting: ${c.frontier} in the frontier, ${c.waiting} ready, ${c.prioritized} prioritized\n\n` +
      (s ? `${c.completed} pages done · ${c.skipped} skipped · ${c.failed} failed · ${s.items} items\n\n` : '') +
      (node.snapshot.file ? `Task file: \`${node.snapshot.file}\`` : ''),
  );
  item.iconPath = new vscode.ThemeIcon(
    stopped
      ? 'debug-stop'
      : node.snapshot.paused
        ? 'debug-pause'
        : interrupted
          ? 'debug-disconnect'
          : node.snapshot.phase.kind === 'running'
            ? 'sync'
            : 'list-unordered',
  );
  return item;
}

/**
 * Path and query when the group's jobs share one host (the host would push the path out of sight); with the host
 * and port when they do not (issue 23, item 10: a job on another port was indistinguishable).
 */
function jobLabel(url: string | undefined, withHost: boolean): string | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url);
    return `${withHost ? u.host : ''}${u.pathname}${u.search}`;
  } catch {
    return url;
  }
}

const STATE_ICONS: Record<JobStateName, string> = {
  frontier: 'inbox',
  waiting: 'watch',
  prioritized: 'arrow-up',
  active: 'play',
  delayed: 'clock',
  completed: 'check',
  skipped: 'debug-step-over',
  failed: 'error',
};

const KEPT = 'Its rows are the newest jobs the queue still keeps.';
const STATE_TOOLTIPS: Record<JobStateName, string> = {
  frontier: 'Pages waiting in the frontier, not jobs yet: they become jobs as the window has room',
  waiting:
    "Jobs ready to run (BullMQ's waiting list); with the frontier's and the prioritized pages, the queue's \"waiting\"",
  prioritized: 'Jobs ready to run, by priority',
  active: "Jobs a worker holds now (fetching, or waiting for its host's turn)",
  delayed: "Jobs waiting for a time: their host's next turn, the rate limit, or a retry's backoff",
  completed: `Pages fetched in this run (the run's count). ${KEPT}`,
  skipped: `Pages not fetched on purpose in this run: robots.txt, a rule gone from the task (the run's count). ${KEPT}`,
  failed: `Pages that failed for good in this run (the run's count). ${KEPT}`,
};
