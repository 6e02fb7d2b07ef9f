import * as vscode from 'vscode';
import { hostname } from 'node:os';
import type { CrawlTask } from '../../core/task/model';
import { TaskPartitions } from '../../frontier/partitions';
import { retryFailureGroup } from '../../observe/failures';
import { ControlRefused } from '../../frontier/refused';
import { afterRetry } from '../retryNotice';
import { readHealth, type HealthSnapshot } from '../../observe/health';
import { recordSample } from '../../observe/metrics';
import { readScreenshot, screenshotUrls } from '../../observe/screenshots';
import { writeScreenshot } from '../../workspace/screenshots';
import type { CrawlStudioApi } from '../api';
import { PanelRegistry, WebviewPanelBase } from '../panel';
import { initTablePanel, panelOptions } from '../webview';
import { parseDashboardMessage } from './messages';
import { readRunChanges } from './changes';
import { dashboardData, WorkerRates } from './data';
import { DASHBOARD_VIEW_TYPE, type DashboardData, type RunChanges, type ToDashboard } from './protocol';

// One dashboard per task file: the crawl's health, re-read from Redis every second while the panel is visible.
// While the run is going the panel also records metric samples (recordSample lets one sampler a second
// through, so a session running elsewhere and this panel never double up), so the history has no gap even
// when the crawl runs on remote workers only.

const POLL_MS = 1000;
/** Failed jobs are re-read when the failure count changes, and at least this often. */
const FAILURES_EVERY_MS = 10_000;
/** A finished run's changes are read from the store again this often until its history (and notification) is there. */
const CHANGES_EVERY_MS = 3_000;

export class DashboardPanel extends WebviewPanelBase<ToDashboard> {
  static readonly panels = new PanelRegistry<DashboardPanel>(DASHBOARD_VIEW_TYPE);
  private timer: NodeJS.Timeout | null = null;
  private previous: HealthSnapshot | null = null;
  private failuresAt = 0;
  /** The task's partitions and their queues, on the extension's connection (made at the first read). */
  private partsObj: TaskPartitions | null = null;
  private readonly rates = new WorkerRates();
  private ticking: Promise<void> = Promise.resolve();
  /** Samples taken by this panel after the run finished (one closes the series, more would be flat noise). */
  /** The finished run's changes as last read from the store (the store is read again until they are complete). */
  private changes: { run: string; value: RunChanges | null; at: number } | null = null;

  private constructor(
    context: vscode.ExtensionContext,
    private readonly api: CrawlStudioApi,
    panel: vscode.WebviewPanel,
    readonly task: CrawlTask,
  ) {
    super(panel);
    initTablePanel(panel, context.extensionUri, 'dashboard', `Dashboard: ${task.name}`);
    this.disposables.push(panel.onDidChangeViewState(() => this.schedule(0)));
  }

  static open(
    context: vscode.ExtensionContext,
    api: CrawlStudioApi,
    task: CrawlTask,
    existing?: vscode.WebviewPanel,
  ): DashboardPanel {
    const { panel, created } = DashboardPanel.panels.show(
      task.file,
      `Dashboard: ${task.name}`,
      panelOptions(context.extensionUri),
      existing,
      (p) => new DashboardPanel(context, api, p, task),
    );
    if (created) panel.schedule(0);
    return panel;
  }

  get data(): DashboardData | null {
    const d = this.lastPosted.get('data');
    return d?.type === 'data' ? d.data : null;
  }

  async receive(raw: unknown): Promise<boolean> {
    const m = parseDashboardMessage(raw);
    if (!m || this.disposed) return false;
    switch (m.type) {
      case 'ready':
        await this.refresh();
        break;
      case 'retryGroup': {
        // Only a group the dashboard is showing: the webview cannot name anything else.
        if (!this.data?.failures.some((f) => f.group === m.group)) return false;
        let n: number;
        try {
          n = await this.retryGroup(m.group);
        } catch (err) {
          // A run stopped since the dashboard last drew its (then enabled) Retry all: the engine's own words.
          if (!(err instanceof ControlRefused)) throw err;
          void vscode.window.showWarningMessage(err.message);
          return false;
        }
        this.post({ type: 'retried', group: m.group, count: n });
        void this.afterRetry(n);
        break;
      }
      case 'openUrl':
      case 'findUrl': {
        // Only sample URLs the dashboard shows, and only http(s).
        const shown = [...(this.data?.failures ?? []), ...(this.data?.skipped ?? [])].some((g) =>
          g.urls.includes(m.url),
        );
        if (!shown || !/^https?:\/\//i.test(m.url)) return false;
        if (m.type === 'openUrl') await vscode.env.openExternal(vscode.Uri.parse(m.url, true));
        else await vscode.commands.executeCommand('crawlStudio.findUrl', m.url, vscode.Uri.file(this.task.file));
        break;
      }
      case 'showScreenshot': {
        // Only a URL the dashboard lists with a screenshot.
        if (!this.data?.screenshots.includes(m.url) || !this.data.run) return false;
        const redis = await this.api.connection.get();
        const shot = await readScreenshot(redis, this.task.name, this.data.run.id, m.url);
        if (!shot) {
          void vscode.window.showWarningMessage(
            `The screenshot of ${m.url} is no longer kept (a run keeps its newest 50, for a week).`,
          );
          return false;
        }
        // A file next to the task (.crawl/screenshots), shown by VS Code's own image viewer.
        const file = await writeScreenshot(this.task.file, this.task.name, m.url, shot.jpeg);
        await vscode.commands.executeCommand('vscode.open', vscode.Uri.file(file), {
          viewColumn: vscode.ViewColumn.Beside,
          preview: true,
        });
        break;
      }
      case 'openResults':
        await vscode.commands.executeCommand('crawlStudio.openResults', vscode.Uri.file(this.task.file));
        break;
      case 'openChanges':
        if (!this.data?.changes) return false;
        await vscode.commands.executeCommand('crawlStudio.openResults', vscode.Uri.file(this.task.file), {
          changes: 'all',
          changeRun: this.data.changes.run,
        });
        break;
    }
    return true;
  }

  async retryGroup(group: string): Promise<number> {
    const redis = await this.api.connection.get();
    const n = await retryFailureGroup(this.parts(redis), group);
    this.failuresAt = 0;
    await this.refresh();
    return n;
  }

  private async afterRetry(n: number): Promise<void> {
    await afterRetry(
      await this.api.connection.get(),
      this.api.crawls,
      { name: this.task.name, file: this.task.file },
      n,
    );
  }

  private parts(redis: Awaited<ReturnType<CrawlStudioApi['connection']['get']>>): TaskPartitions {
    this.partsObj ??= new TaskPartitions(redis, this.task.name);
    return this.partsObj;
  }

  /** Samples (while the run goes) and re-reads everything the dashboard shows; one at a time. */
  refresh(): Promise<void> {
    this.ticking = this.ticking
      .then(() => this.tick())
      .catch((err: unknown) => this.post({ type: 'error', message: err instanceof Error ? err.message : String(err) }));
    return this.ticking;
  }

  private async tick(): Promise<void> {
    if (this.disposed) return;
    const redis = await this.api.connection.get();
    // A run that ended is not sampled (its driver took the last sample as it drained): recordSample says no.
    await recordSample(redis, this.task.name);
    const failed = this.previous?.stats?.failed;
    const readFailures = Date.now() - this.failuresAt > FAILURES_EVERY_MS;
    const h = await readHealth(this.parts(redis), this.task, { readFailures, previous: this.previous });
    if (readFailures || h.stats?.failed !== failed) {
      if (!readFailures) {
        this.failuresAt = 0;
        return this.tick();
      }
      this.failuresAt = Date.now();
    }
    this.previous = h;
    // Only a task whose rules keep screenshots has any to list.
    const shots =
      h.run && this.task.rules.some((r) => r.browser && r.browser.screenshot !== 'never')
        ? await screenshotUrls(redis, this.task.name, h.run.run)
        : [];
    this.post({
      type: 'data',
      data: dashboardData(this.task, h, this.rates, hostname(), shots, await this.runChanges(h)),
    });
  }

  /** A finished run's changes: read once its history closed, and again until its notification's outcome is recorded. */
  private async runChanges(h: HealthSnapshot): Promise<RunChanges | null> {
    if (!h.run || (h.phase.kind !== 'finished' && h.phase.kind !== 'stopped')) return null;
    const c = this.changes;
    const settled = c?.run === h.run.run && c.value !== null && (c.value.notify !== null || !this.task.notify);
    if (settled || (c?.run === h.run.run && Date.now() - c.at < CHANGES_EVERY_MS)) return c.value;
    // The store may be busy or gone: the dashboard's other figures do not wait on it.
    const value = await readRunChanges(this.task, h.run.run).catch(() => (c?.run === h.run!.run ? c.value : null));
    this.changes = { run: h.run.run, value, at: Date.now() };
    return value;
  }

  private schedule(delayMs = POLL_MS): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.disposed || !this.panel.visible) return;
    this.timer = setTimeout(() => void this.refresh().finally(() => this.schedule()), delayMs);
  }

  protected release(): void {
    if (this.timer) clearTimeout(this.timer);
    DashboardPanel.panels.forget(this.task.file, this);
    const parts = this.partsObj;
    void this.ticking.finally(() => parts?.close());
  }
}
