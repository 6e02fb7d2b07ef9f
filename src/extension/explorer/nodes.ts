import type * as vscode from 'vscode';
import type { JobStateName } from './jobStates';
import type { CrawlJob, QueueSnapshot } from './queueModel';

// The Queue Explorer's rows: connection -> task queues (and task files never run) -> job states -> jobs. The tree
// provider keeps them and updates them in place, so their ids stay stable across refreshes.

export const PAGE_SIZE = 100;

export type ExplorerNode = ConnectionNode | NoticeNode | QueueNode | TaskFileNode | StateNode | JobNode | MoreNode;

export class ConnectionNode {
  readonly kind = 'connection';
}
export class NoticeNode {
  readonly kind = 'notice';
  constructor(
    readonly id: string,
    public label: string,
    public detail: string,
    public icon: string,
    public command?: vscode.Command,
  ) {}
}
export class QueueNode {
  readonly kind = 'queue';
  constructor(
    readonly name: string,
    public snapshot: QueueSnapshot,
  ) {}
}
/** A task file of the workspace whose task has no queue yet (never run here), valid or with its error count. */
export class TaskFileNode {
  readonly kind = 'taskFile';
  constructor(
    readonly uri: vscode.Uri,
    public name: string | null,
    public errors: number,
  ) {}
}
export class StateNode {
  readonly kind = 'state';
  jobs: JobNode[] = [];
  limit = PAGE_SIZE;
  /** Hosts (with ports) among the listed jobs: more than one, and the rows name theirs. */
  hosts = 1;
  constructor(
    readonly queue: QueueNode,
    readonly state: JobStateName,
  ) {}
  get count(): number {
    return this.queue.snapshot.counts[this.state];
  }
}
export class JobNode {
  readonly kind = 'job';
  constructor(
    readonly parent: StateNode,
    public job: CrawlJob,
  ) {}
}
export class MoreNode {
  readonly kind = 'more';
  constructor(readonly parent: StateNode) {}
}
