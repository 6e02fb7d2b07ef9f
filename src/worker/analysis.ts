import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parentPort, Worker, workerData } from 'node:worker_threads';
import { analysePage, PageFormatError, ruleByName, type PageOutcome } from '../core/pipeline/page';
import type { PageFacts } from '../core/extract/extract';
import { TooDeepError } from '../core/extract/dom';
import type { SeriesRef } from '../core/request/build';
import type { CrawlTask } from '../core/task/model';

// Parsing and extraction of a fetched page, off the worker's event loop. They are synchronous and a page decides
// how long they take: an enormous page takes seconds, and deeply nested markup took htmlparser2 minutes before the
// parse learnt to stop it (core/extract/dom.ts). On the event loop that
// stops BullMQ from renewing the locks of every job in the process, so they all stall and are handed to other
// workers, where the same page does it again. In a thread the loop stays free, and a page that runs past its
// budget is stopped (the thread is replaced) and fails with a reason instead of taking the worker with it.

/** Longest a page may take to parse and extract, whatever its request timeout. */
const MIN_ANALYSIS_BUDGET_MS = 30_000;

/** Heap of the analysis thread: a page that needs more fails instead of the worker process running out. */
const THREAD_HEAP_MB = 1024;

export class AnalysisError extends Error {
  constructor(
    message: string,
    /** 'budget': too slow; 'memory': the thread ran out of heap; 'error': parsing or extraction threw. */
    readonly kind: 'budget' | 'memory' | 'error',
  ) {
    super(message);
    this.name = 'AnalysisError';
  }
}

export interface AnalysisInput {
  readonly task: CrawlTask;
  /** What `page:` fields read, from the fetch (factsOfFetch); links resolve against its `finalUrl`. */
  readonly facts: PageFacts;
  readonly html: string;
  readonly rule: string;
  readonly depth: number;
  /** `html` is a JSON response's text (see analysePage). */
  readonly json?: boolean;
  readonly series?: SeriesRef;
}

/** What crosses to the thread for one page: the input, with the task by name (the thread has every task). */
type PageMessage = Omit<AnalysisInput, 'task'> & { readonly id: number; readonly task: string };

/**
 * What a worker needs of a page's outcome: dropped links only as counts by reason. The full list (a list page drops
 * dozens of links, each with its URL) would cross the thread boundary, copied, for nothing.
 */
export interface AnalysedPage extends Omit<PageOutcome, 'dropped'> {
  readonly droppedByReason: Readonly<Record<string, number>>;
}

function forWorker(out: PageOutcome): AnalysedPage {
  const droppedByReason: Record<string, number> = {};
  for (const d of out.dropped) droppedByReason[d.reason] = (droppedByReason[d.reason] ?? 0) + 1;
  return { items: out.items, problems: out.problems, kept: out.kept, droppedByReason };
}

export interface PageAnalyser {
  analyse(input: AnalysisInput): Promise<AnalysedPage>;
  close(): Promise<void>;
}

function analysisBudgetMs(task: CrawlTask): number {
  return Math.max(MIN_ANALYSIS_BUDGET_MS, 2 * task.request.timeoutMs);
}

/** In the caller's thread: for tests and hosts without the worker bundle. */
export function inlineAnalyser(): PageAnalyser {
  return {
    // A throw in the executor rejects the promise, as a worker thread's failure does.
    analyse: (input) => new Promise((resolve) => resolve(analyseHere(input))),
    close: () => Promise.resolve(),
  };
}

function analyseHere({ task, rule, ...page }: AnalysisInput): AnalysedPage {
  const r = ruleByName(task, rule);
  if (!r) throw new AnalysisError(`no rule '${rule}' in the task`, 'error');
  try {
    return forWorker(analysePage(task, { ...page, rule: r }));
  } catch (err) {
    throw new AnalysisError(describeFailure(err), 'error');
  }
}

/**
 * Analysis in one worker thread running `script` (dist/analysis.js), pages one at a time in the order they came, each
 * within `budgetMs` of its task. Falls back to the caller's thread when the script is missing (tests run the processor
 * from their own bundles).
 */
export function createAnalyser(
  tasks: readonly CrawlTask[],
  script = join(__dirname, 'analysis.js'),
  budgetMs: (task: CrawlTask) => number = analysisBudgetMs,
): PageAnalyser {
  if (!existsSync(script)) return inlineAnalyser();
  try {
    structuredClone(tasks); // what the thread receives; a task that cannot cross is analysed here
  } catch {
    return inlineAnalyser();
  }
  return new ThreadAnalyser(script, tasks, budgetMs);
}

interface Pending {
  readonly id: number;
  readonly input: AnalysisInput;
  readonly resolve: (out: AnalysedPage) => void;
  readonly reject: (err: Error) => void;
}

/**
 * Pages posted to the thread ahead of the one it is analysing. Posted one at a time, the thread idled after each
 * page until this process's event loop had received the result and posted the next: on a busy worker that wait,
 * not the analysis, was most of a page's time (bench: 21 ms of a page's ~27 at 16 jobs in flight).
 */
const PIPELINE_DEPTH = 4;

class ThreadAnalyser implements PageAnalyser {
  private thread: Worker | null = null;
  /** Not yet posted. */
  private readonly waiting: Pending[] = [];
  /** Posted to the current thread, in order: the thread analyses them one by one, `posted[0]` now. */
  private readonly posted: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly script: string,
    private readonly tasks: readonly CrawlTask[],
    private readonly budgetMs: (task: CrawlTask) => number,
  ) {
    // Started now, while the worker connects: booting a thread loads its bundle, and a crawl's first page, whose
    // links every later page waits for, should not wait for that too.
    this.thread = this.start();
  }

  analyse(input: AnalysisInput): Promise<AnalysedPage> {
    if (this.closed) return Promise.reject(new AnalysisError('the page analyser is closed', 'error'));
    return new Promise<AnalysedPage>((resolve, reject) => {
      this.waiting.push({ id: this.nextId++, input, resolve, reject });
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const p of [...this.posted.splice(0), ...this.waiting.splice(0)])
      p.reject(new AnalysisError('the page analyser is closed', 'error'));
    const t = this.thread;
    this.thread = null;
    if (t) await t.terminate();
  }

  private start(): Worker {
    const t = new Worker(this.script, {
      workerData: { tasks: this.tasks },
      resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
      stdout: false,
      stderr: false,
    });
    t.unref();
    t.on('message', (m: { id: number; ok: boolean; out?: AnalysedPage; message?: string }) => this.settle(t, m));
    t.on('error', (err) => this.lose(t, err.message, /heap|memory/i.test(err.message) ? 'memory' : 'error'));
    t.on('exit', (code) => this.lose(t, `the analysis thread exited (code ${code})`, 'error'));
    return t;
  }

  private pump(): void {
    while (!this.closed && this.posted.length < PIPELINE_DEPTH && this.waiting.length > 0) {
      this.thread ??= this.start();
      const p = this.waiting.shift()!;
      this.posted.push(p);
      const { task, ...page } = p.input;
      this.thread.postMessage({ ...page, id: p.id, task: task.name } satisfies PageMessage);
      if (this.posted.length === 1) this.armBudget();
    }
  }

  private settle(t: Worker, m: { id: number; ok: boolean; out?: AnalysedPage; message?: string }): void {
    const p = this.posted[0];
    if (this.thread !== t || !p || p.id !== m.id) return;
    this.posted.shift();
    // The thread started the next posted page as it sent this result; its budget runs from about now.
    this.armBudget();
    if (m.ok) p.resolve(m.out!);
    else p.reject(new AnalysisError(m.message ?? 'analysis failed', 'error'));
    this.pump();
  }

  /** The budget of the page the thread is on: past it, the thread is stopped and replaced. */
  private armBudget(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const p = this.posted[0];
    if (!p) return;
    const budget = this.budgetMs(p.input.task);
    this.timer = setTimeout(() => {
      const t = this.thread;
      this.replace(
        new AnalysisError(
          `parsing and extracting ${p.input.facts.finalUrl} took longer than ${budget / 1000} s (stopped): deeply nested or enormous markup`,
          'budget',
        ),
      );
      void t?.terminate();
    }, budget);
  }

  /** The thread died (or was stopped) while on a page: that page fails. */
  private lose(t: Worker, message: string, kind: AnalysisError['kind']): void {
    if (this.thread !== t) return;
    const what = kind === 'memory' ? 'ran out of memory parsing and extracting the page' : message;
    this.replace(new AnalysisError(what, kind));
  }

  /** Fails the page the thread was on; the pages posted behind it go to a fresh thread, in their order. */
  private replace(err: AnalysisError): void {
    this.thread = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const head = this.posted.shift();
    this.waiting.unshift(...this.posted.splice(0));
    head?.reject(err);
    this.pump();
  }
}

/** The analysis thread's loop (dist/analysis.js). */
export function runAnalysisThread(): void {
  const tasks = (workerData as { tasks: CrawlTask[] }).tasks;
  const analyser = inlineAnalyser();
  parentPort!.on('message', ({ id, task: name, ...page }: PageMessage) => {
    const task = tasks.find((t) => t.name === name);
    if (!task) {
      parentPort!.postMessage({ id, ok: false, message: `no task '${name}' in this worker` });
      return;
    }
    analyser.analyse({ ...page, task }).then(
      (out) => parentPort!.postMessage({ id, ok: true, out }),
      (err: Error) => parentPort!.postMessage({ id, ok: false, message: err.message }),
    );
  });
}

function describeFailure(err: unknown): string {
  if (err instanceof RangeError && /call stack/i.test(err.message))
    return 'the page nests elements too deeply to extract (stack overflow)';
  if (err instanceof PageFormatError || err instanceof TooDeepError) return err.message;
  const msg = err instanceof Error ? err.message : String(err);
  return `extraction failed: ${msg.slice(0, 300)}`;
}
