import * as vscode from 'vscode';
import { highlightSite, originOf, pageForFrame, type PreparedPage } from '../../core/designer/page';
import { structuredDataPaths, type StructuredEntry, type StructuredSource } from '../../core/extract/structuredData';
import { computePreview, type PreviewRequest } from '../../core/designer/preview';
import {
  parseWebviewMessage,
  type AnalysisView,
  type HostMessage,
  type PageChoice,
  type PreviewState,
  type SitemapView,
  type SuggestionView,
  type WebviewMessage,
} from '../../core/designer/protocol';
import { selectorSites, siteAt, siteLabel } from '../../core/designer/sites';
import type { CrawlTask } from '../../core/task/model';
import { parseTaskText } from '../../workspace/taskFile';
import type { LoadedPage, LoadedSitemap, PageSource } from './pages';
import { describeAccess } from './previewAccess';
import { previewSitemap } from '../../core/designer/sitemapPreview';
import { routeRule } from '../../core/pipeline/page';
import { PREVIEW_VIEW_TYPE } from './commands';
import { WebviewPanelBase } from '../panel';
import { mediaRoot, previewCsp, webviewHtml, webviewOptions } from '../webview';
import { pageMenu } from './pageMenu';
import { loadPreviewPage, pageState } from './previewPage';
import { pickSuggestion } from './picker';
import { UpdateQueue, type UpdateKind } from './updateQueue';

// One preview per task file, beside its editor. The panel owns the page on show and what the person chose
// (page, rule, images); each update reads the document's current text (unsaved edits included) and runs the
// pure preview model. Updates are debounced and never overlap: a slow page makes the preview lag, never the
// editor, and the last keystroke always gets its update.

export interface PanelHost {
  readonly extensionUri: vscode.Uri;
  /** Where Insert writes: applies the edit to the task document. */
  insert(panel: PreviewPanel, selector: string, all: boolean): Promise<string | null>;
  /** Adds a field reading a path of the page's structured data (the Data tab): the edit, or null. */
  insertField(panel: PreviewPanel, source: StructuredSource, path: string): Promise<string | null>;
  /** The preview showed `url` with `rule`: the editor re-checks that rule's selectors on it. */
  pageShown(panel: PreviewPanel): void;
  saveFixture(panel: PreviewPanel): Promise<unknown>;
  log(message: string): void;
  /** The variables a request of `task` may name: the editor's environment, then its Secret Storage. */
  secretEnv(task: CrawlTask | null): Promise<Readonly<Record<string, string | undefined>>>;
}

/** Debounce of re-analysis after an edit (the issue: updates within 150 ms of a keystroke pause). */
const EDIT_DEBOUNCE_MS = 150;
/** Debounce of highlight updates after a cursor move: no re-analysis, only the selector under the cursor. */
const CURSOR_DEBOUNCE_MS = 40;

export interface PanelSnapshot {
  readonly state: PreviewState;
  readonly seq: number;
  readonly suggestion: SuggestionView | null;
  readonly frameKey: string;
  readonly frameBytes: number;
  /** The last `rendered` acknowledgement from the webview. */
  readonly rendered: {
    readonly seq: number;
    readonly rows: number;
    readonly highlighted: number;
    readonly frame: string;
    readonly data?: number;
  } | null;
  readonly lastInsert: { readonly selector: string; readonly target: string } | null;
  /** The last edit-triggered update: from the document change event to the state posted (debounce included). */
  readonly lastEditUpdateMs: number | null;
}

export class PreviewPanel extends WebviewPanelBase<HostMessage> {
  static readonly viewType = PREVIEW_VIEW_TYPE;

  private readonly changed = new vscode.EventEmitter<PanelSnapshot>();
  readonly onDidChange = this.changed.event;
  private readonly closed = new vscode.EventEmitter<void>();
  readonly onDidClose = this.closed.event;

  cursor: number | null = null;
  private chosenRule: string | null;
  private images = false;
  /** The Browser toggle as the user set it; null: as the worker would, by whether the rule asks for a browser. */
  private browserChoice: boolean | null = null;
  private pageUrl: string | null = null;
  /** The request of the page on show when it is not a plain GET, or a page of a series. */
  private pageRequest: PreviewRequest | null = null;
  /** Requests the preview listed (kept links, start entries), by the key the webview sends back to open one. */
  private requests = new Map<string, PreviewRequest>();
  loaded: LoadedPage | null = null;
  /** The URL shown is a sitemap: what was read of it (routed anew at each update, as the task is edited). */
  private sitemap: LoadedSitemap | null = null;
  private sitemapView: SitemapView | null = null;
  /** How the page was reached (session, login, proxy), for the status line. */
  private accessNote: string | null = null;
  /** Which page this is for its rule and why (the Preview lens's choice), until another page opens. */
  private pageWhy: string | null = null;
  private nextWhy: { why: string; rule: string } | null = null;
  /** The rule the lens chose the page on show for; or forced on it for want of a page of its own (`guess`). */
  private lensFor: { rule: string; guess: boolean } | null = null;
  /**
   * The page this preview analysed last with each rule: what the editor's "matches 0 elements" warnings are about.
   * Kept here, not on disk, so the warnings go with the preview (issue 32, item 6: they outlived it, and a reload).
   */
  private readonly shownByRule = new Map<string, PreparedPage>();
  private pageError: string | null = null;
  private loading: string | null = null;
  private abort: AbortController | null = null;
  lastGood: CrawlTask | null = null;
  task: CrawlTask | null = null;
  private analysis: AnalysisView | null = null;
  private analysedVersion = -1;
  private choices: PageChoice[] = [];
  private seq = 0;
  private suggestion: SuggestionView | null = null;
  private frameKey = '';
  private frameBytes = 0;
  private rendered: PanelSnapshot['rendered'] = null;
  private lastInsert: PanelSnapshot['lastInsert'] = null;
  private editAt: number | null = null;
  private lastEditUpdateMs: number | null = null;
  private readonly updates = new UpdateQueue(
    (kind) => this.update(kind),
    () => this.disposed,
  );

  constructor(
    readonly uri: vscode.Uri,
    panel: vscode.WebviewPanel,
    private readonly source: PageSource,
    private readonly host: PanelHost,
    rule: string | null,
  ) {
    super(panel);
    this.chosenRule = rule;
    this.setHtml();
    this.disposables.push(this.changed, this.closed);
  }

  /** The panel's webview options: scripts for our bundle only, files from dist/media and the page cache. */
  static options(extensionUri: vscode.Uri, cacheDir: vscode.Uri): vscode.WebviewPanelOptions & vscode.WebviewOptions {
    return webviewOptions(extensionUri, {
      enableForms: false,
      localResourceRoots: [mediaRoot(extensionUri), cacheDir],
    });
  }

  private setHtml(): void {
    const origin = this.images && this.loaded ? originOf(this.loaded.meta.finalUrl) : null;
    this.panel.webview.html = webviewHtml(this.panel.webview, this.host.extensionUri, {
      view: 'designer',
      title: 'Crawl Preview',
      csp: (source, n) => previewCsp(source, n, origin),
      app: { 'data-image-origin': origin ?? '' },
    });
  }

  get document(): vscode.TextDocument | undefined {
    return vscode.workspace.textDocuments.find((d) => d.uri.toString() === this.uri.toString());
  }

  get rule(): string | null {
    return this.analysis?.rule.name ?? null;
  }

  snapshot(): PanelSnapshot {
    return {
      state: this.state(),
      seq: this.seq,
      suggestion: this.suggestion,
      frameKey: this.frameKey,
      frameBytes: this.frameBytes,
      rendered: this.rendered,
      lastInsert: this.lastInsert,
      lastEditUpdateMs: this.lastEditUpdateMs,
    };
  }

  // -------------------------------------------------------------------------------------------------------
  // Messages from the webview (validated: anything else is dropped)

  async receive(raw: unknown): Promise<boolean> {
    const msg = parseWebviewMessage(raw);
    if (!msg) {
      this.host.log(`preview: ignored a malformed message from the webview: ${JSON.stringify(raw)?.slice(0, 200)}`);
      return false;
    }
    await this.handle(msg);
    return true;
  }

  private async handle(msg: WebviewMessage): Promise<void> {
    switch (msg.type) {
      case 'ready':
        this.post({ type: 'state', seq: this.seq, state: this.state() });
        this.postFrame();
        if (this.suggestion) this.post({ type: 'suggestion', view: this.suggestion, error: null });
        return;
      case 'openPage': {
        // A key names a request the preview listed; one it does not know (an old view) opens the URL with a GET.
        const listed = msg.key !== undefined ? this.requests.get(msg.key) : undefined;
        // A URL another rule's `match` fits is that rule's page (issue 23, item 10: a URL typed into "Any URL" ran
        // with the rule chosen before, often the first one); a URL no `match` fits keeps the chosen rule.
        const t = this.task ?? this.lastGood;
        const matched = t ? routeRule(t, msg.url, null) : null;
        if (matched && this.chosenRule !== null && matched.name !== this.chosenRule) this.chosenRule = null;
        return this.openPage(msg.url, false, listed && listed.url === msg.url ? listed : null);
      }
      case 'refetch':
        if (this.pageUrl) {
          this.source.forgetRobots();
          return this.openPage(this.pageUrl, true, this.pageRequest);
        }
        return;
      case 'cancelFetch':
        this.abort?.abort();
        return;
      case 'setRule':
        this.chosenRule = msg.rule;
        this.updates.schedule('full', 0);
        return;
      case 'setImages':
        if (this.images !== msg.allowed) {
          this.images = msg.allowed;
          // The CSP allows the page's origin for images only while this is on: a new document, a new policy.
          this.setHtml();
        }
        return;
      case 'setBrowser':
        if (this.browserChoice !== msg.on) {
          this.browserChoice = msg.on;
          if (this.pageUrl) return this.openPage(this.pageUrl, false, this.pageRequest);
          this.postState();
        }
        return;
      case 'pick':
        this.pick(msg.index);
        return;
      case 'insert':
        return this.inserted(msg.selector, await this.host.insert(this, msg.selector, msg.all));
      case 'insertField':
        return this.inserted(`${msg.source}: ${msg.path}`, await this.host.insertField(this, msg.source, msg.path));
      case 'copy':
        await vscode.env.clipboard.writeText(msg.text);
        return;
      case 'saveFixture':
        await this.host.saveFixture(this);
        return;
      case 'rendered':
        this.rendered = {
          seq: msg.seq,
          rows: msg.rows,
          highlighted: msg.highlighted,
          frame: msg.frame,
          ...(msg.data !== undefined ? { data: msg.data } : {}),
        };
        this.fire();
        return;
    }
  }

  /** `written` went into the task file at `target` (null: nothing was written). */
  private inserted(written: string, target: string | null): void {
    if (target === null) return;
    this.lastInsert = { selector: written, target };
    this.post({ type: 'inserted', selector: written, target });
    this.fire();
  }

  // -------------------------------------------------------------------------------------------------------
  // Pages

  /**
   * Shows `url`: from the cache, or fetched (always with `refetch`). A newer request cancels an older one. With
   * `request`, the page is that request (a POST with its body, a page of a series), sent as a worker sends it.
   */
  async openPage(url: string, refetch: boolean, request: PreviewRequest | null = null): Promise<void> {
    this.abort?.abort();
    const abort = new AbortController();
    this.abort = abort;
    this.pageUrl = url;
    this.pageRequest = request;
    this.pageWhy = this.nextWhy?.why ?? null;
    this.lensFor = this.nextWhy ? { rule: this.nextWhy.rule, guess: false } : null;
    this.nextWhy = null;
    this.loading = `${refetch ? 'Refetching' : 'Opening'} ${request?.request ? `${request.request.method} ` : ''}${url}`;
    this.pageError = null;
    this.postState();
    const task = this.task ?? this.lastGood ?? this.parseNow();
    try {
      const { loaded, sitemap } = await loadPreviewPage(this.source, url, task, {
        refetch,
        signal: abort.signal,
        request,
        browser: this.browserOn(),
        rule: this.pageRule(),
        secretEnv: (t) => this.host.secretEnv(t),
      });
      if (abort.signal.aborted || this.disposed) return;
      this.loaded = loaded;
      this.sitemap = sitemap;
      this.sitemapView = null;
      this.pageError = null;
      this.accessNote = task && !loaded?.fromCache ? describeAccess(task, await this.source.env(task)) : null;
    } catch (err) {
      if (this.abort !== abort || this.disposed) return;
      this.loaded = null;
      this.sitemap = null;
      this.sitemapView = null;
      this.accessNote = null;
      this.pageError = err instanceof Error ? err.message : String(err);
    } finally {
      if (this.abort === abort) {
        this.abort = null;
        this.loading = null;
      }
    }
    this.suggestion = null;
    this.post({ type: 'suggestion', view: null, error: null });
    await this.refreshChoices();
    if (this.images) this.setHtml();
    this.frameKey = '';
    this.postFrame();
    this.updates.schedule('full', 0);
  }

  /**
   * The task as the document says now, before the first update parsed it: the first page is fetched with the
   * task's options (its headers, login and proxies) too.
   */
  private parseNow(): CrawlTask | null {
    const text = this.document?.getText();
    const task = text === undefined ? null : parseTaskText(text, this.uri.fsPath).task;
    if (task) this.lastGood = task;
    return task;
  }

  /** The page to start with: the one asked for, else the newest cached page of the rule, else the first start URL. */
  async openInitial(url: string | null): Promise<void> {
    await this.refreshChoices();
    if (url) return this.openPage(url, false);
    const cached = await this.source.list();
    const forRule = this.chosenRule ? cached.find((m) => m.rule === this.chosenRule) : undefined;
    const start = this.choices.find((c) => c.kind === 'start');
    if (!forRule && start)
      return this.openPage(start.url, false, start.key !== undefined ? (this.requests.get(start.key) ?? null) : null);
    const first = forRule?.url ?? cached[0]?.url;
    if (first) return this.openPage(first, false, forRule?.key ? (this.requests.get(forRule.key) ?? null) : null);
    this.updates.schedule('full', 0);
  }

  private async refreshChoices(): Promise<void> {
    const text = this.document?.getText() ?? '';
    // Before the first analysis (the preview opening) the file is parsed here.
    if (!this.task && !this.lastGood) this.lastGood = parseTaskText(text, this.uri.fsPath).task;
    this.choices = await pageMenu(this.task ?? this.lastGood, text, this.source, this.requests);
  }

  private postFrame(): void {
    const page = this.loaded?.page ?? null;
    if (!page) {
      this.frameKey = '';
      this.frameBytes = 0;
      this.post({ type: 'frame', html: null, key: '' });
      return;
    }
    const html = pageForFrame(page, this.images);
    this.frameKey = `${this.loaded!.meta.fetchedAt}|${this.images ? 'img' : 'noimg'}`.slice(0, 64);
    this.frameBytes = html.length;
    this.post({ type: 'frame', html, key: this.frameKey });
  }

  // -------------------------------------------------------------------------------------------------------
  // Updates

  documentChanged(): void {
    this.editAt = performance.now();
    this.updates.schedule('full', this.editDebounce());
  }

  /**
   * 150 ms, or longer on a page whose update itself is slow (thousands of items): while the person types, such
   * a page is re-analysed about once per pause rather than once per keystroke, keeping the extension host free.
   */
  private editDebounce(): number {
    const last = this.analysis?.timings.totalMs ?? 0;
    return Math.round(Math.max(EDIT_DEBOUNCE_MS, Math.min(2_000, last * 1.5)));
  }

  cursorMoved(offset: number): void {
    if (offset === this.cursor) return;
    this.cursor = offset;
    this.updates.schedule('cursor', CURSOR_DEBOUNCE_MS);
  }

  private async update(kind: UpdateKind): Promise<void> {
    try {
      const doc = this.document ?? (await vscode.workspace.openTextDocument(this.uri));
      if (kind === 'cursor' && this.analysis && this.analysedVersion === doc.version)
        this.updateHighlight(doc.getText());
      else this.analyse(doc);
    } catch (err) {
      this.host.log(`preview update failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    }
  }

  private analyse(doc: vscode.TextDocument): void {
    const page = this.loaded?.page ?? null;
    const previousRule = this.analysis && !this.analysis.rule.fallback ? this.analysis.rule.name : null;
    const r = computePreview({
      text: doc.getText(),
      file: this.uri.fsPath,
      env: process.env,
      page,
      rule: this.chosenRule,
      cursor: this.cursor,
      lastGood: this.lastGood,
      robots: (origin) => {
        const t = this.task ?? this.lastGood;
        return t ? this.source.robotsFor(origin, t, () => this.updates.schedule('full', 0)) : undefined;
      },
      ...(this.pageRequest?.series ? { series: this.pageRequest.series } : {}),
    });
    for (const [k, v] of r.requests) this.requests.set(k, v);
    // Bounded: a person clicks through a few pages, a generated page may list thousands of requests.
    while (this.requests.size > 5_000) this.requests.delete(this.requests.keys().next().value!);
    this.task = r.task;
    if (r.task) this.lastGood = r.task;
    this.analysis = r.view;
    const routing = r.task ?? this.lastGood;
    this.sitemapView = this.sitemap && routing ? previewSitemap(routing, this.sitemap.read, Date.now()) : null;
    this.analysedVersion = doc.version;
    if (this.editAt !== null) {
      this.lastEditUpdateMs = performance.now() - this.editAt;
      this.editAt = null;
    }
    this.postState();
    // The task or the rule now says otherwise about rendering than the copy shown (the task was parsed after the
    // page opened, the rule changed): show the other copy. openPage loads what browserOn() says, so this settles.
    if (
      page &&
      this.pageUrl &&
      !this.loading &&
      !this.pageRequest?.request &&
      !page.json &&
      !!this.loaded?.meta.rendered !== this.browserOn()
    )
      void this.openPage(this.pageUrl, false);
    // The page becomes its rule's page for the editor's zero-match checks, unless the rule only stands in.
    const rule = r.view.rule.fallback ? null : r.view.rule.name;
    const cacheKey = page?.key ?? page?.url;
    const guessed = this.lensFor?.guess === true && this.lensFor.rule === rule;
    if (page && rule && !guessed && this.shownByRule.get(rule) !== page) {
      this.shownByRule.set(rule, page);
      this.host.pageShown(this);
    }
    // A rule applied for want of a page of its own does not make this page its page.
    if (page && r.task && !guessed && (rule !== previousRule || this.rememberedFor !== cacheKey)) {
      this.rememberedFor = cacheKey!;
      void this.source.rememberRule(cacheKey!, rule);
    }
  }
  private rememberedFor: string | null = null;

  /** Only the selector under the cursor changed: recompute its highlight on the analysed page. */
  private updateHighlight(text: string): void {
    const page = this.loaded?.page;
    if (!page || !this.analysis) return;
    const site = this.cursor === null ? null : siteAt(selectorSites(text), this.cursor);
    const highlight = site ? highlightSite(page, site, siteLabel(site)) : null;
    this.analysis = { ...this.analysis, highlight };
    this.postState();
  }

  /** The picker: a suggestion for the clicked element, relative to the item scope when the cursor is in an item. */
  pick(index: number): SuggestionView | null {
    const page = this.loaded?.page;
    const picked = page
      ? pickSuggestion(page, this.document?.getText() ?? '', this.cursor, index, () => this.structuredData(page))
      : { error: 'No page to pick from.' };
    if ('error' in picked) {
      this.post({ type: 'suggestion', view: null, error: picked.error });
      return null;
    }
    this.suggestion = picked.view;
    this.post({ type: 'suggestion', view: this.suggestion, error: null });
    this.fire();
    return this.suggestion;
  }

  private state(): PreviewState {
    return {
      file: vscode.workspace.asRelativePath(this.uri),
      restore: { uri: this.uri.toString(), rule: this.chosenRule },
      page: pageState(this.loaded, this.sitemap),
      pageError: this.pageError,
      loading: this.loading,
      choices: this.choices,
      images: this.images,
      browser: this.browserOn(),
      sitemap: this.sitemapView,
      access: this.accessNote,
      pageWhy: this.pageWhy,
      analysis: this.analysis,
      ...(this.loaded && !this.loaded.page.json ? { structured: this.structuredData(this.loaded.page) } : {}),
    };
  }

  /** The page's structured data paths, read once per page shown. */
  private structuredData(page: PreparedPage): readonly StructuredEntry[] {
    if (this.structuredOf?.page !== page)
      this.structuredOf = { page, entries: structuredDataPaths(page.html, page.finalUrl) };
    return this.structuredOf.entries;
  }
  private structuredOf: { readonly page: PreparedPage; readonly entries: readonly StructuredEntry[] } | null = null;

  private browserOn(): boolean {
    if (this.browserChoice !== null) return this.browserChoice;
    const t = this.task ?? this.lastGood;
    const rule = this.pageRule();
    return !!t?.rules.find((r) => r.name === rule)?.browser;
  }

  /** The rule the page is analysed with: the one chosen, else the one the analysis found (start URL, match). */
  private pageRule(): string | null {
    return this.chosenRule ?? this.analysis?.rule.name ?? null;
  }

  private postState(): void {
    this.seq++;
    this.post({ type: 'state', seq: this.seq, state: this.state() });
    this.fire();
  }

  private fire(): void {
    this.changed.fire(this.snapshot());
  }

  reveal(): void {
    this.panel.reveal(this.panel.viewColumn ?? vscode.ViewColumn.Beside, true);
  }

  /** Says why the next page opened is the one on show ("a page of rule detail from the start page's links"). */
  noteNextPage(why: string, rule: string): void {
    this.nextWhy = { why, rule };
  }

  /**
   * Says it of the page on show (the lens kept it). `guess`: the rule is only applied to this page for want of one
   * of its own, so its selectors are not checked against it.
   */
  notePage(why: string, rule: string, guess = false): void {
    this.pageWhy = why;
    this.lensFor = { rule, guess };
    this.postState();
  }

  /**
   * The page on show and the rule it is analysed with, when a crawl would give it that rule (a start URL, its
   * `match`) or the lens chose it for the rule; a rule merely chosen in the preview says nothing about the page.
   */
  shownPage(): { url: string; rule: string } | null {
    const a = this.analysis?.rule;
    if (!a?.name || a.fallback || !this.pageUrl || !this.loaded) return null;
    const lens = this.lensFor?.rule === a.name && !this.lensFor.guess;
    return a.reason !== 'chosen' || lens ? { url: this.pageUrl, rule: a.name } : null;
  }

  /** The pages this preview analysed, by rule: the editor's selector checks run against them while it is open. */
  pagesByRule(): ReadonlyMap<string, PreparedPage> {
    return this.shownByRule;
  }

  chooseRule(rule: string | null): void {
    if (rule === this.chosenRule) return;
    this.chosenRule = rule;
    this.updates.schedule('full', 0);
  }

  protected release(): void {
    this.updates.dispose();
    this.abort?.abort();
    this.closed.fire();
  }
}
