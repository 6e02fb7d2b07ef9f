import * as vscode from 'vscode';
import {
  completionContext,
  hoverAt,
  isRuleReference,
  keyCompletions,
  valueCompletions,
} from '../../core/designer/schemaHelp';
import {
  countAt,
  countMessage,
  countSelectors,
  zeroMatchWarnings,
  type SiteCount,
} from '../../core/designer/selectorChecks';
import type { PreparedPage } from '../../core/designer/page';
import { similarSelectors } from '../../core/designer/similarSelectors';
import { yamlScalar } from '../../core/designer/insert';
import { parseTaskText } from '../../workspace/taskFile';
import { outlineTask } from '../../core/task/outline';
import { storeChecksFor } from '../../workspace/storePlace';

// Editor intelligence for task files: the validator's problems as you type (exact ranges from the YAML
// source), selectors that match nothing on the page the preview last showed for their rule, completion and
// hover from the JSON Schema, and a "Preview" lens on every page rule.

import { isTaskDocument, TASK_FILES } from '../taskFiles';

export { isTaskDocument, TASK_FILES };

/** Debounce of the Problems panel after an edit. */
const DIAGNOSTICS_DEBOUNCE_MS = 200;

export type PagesFor = (doc: vscode.TextDocument) => Promise<ReadonlyMap<string, PreparedPage>>;

export class TaskDiagnostics implements vscode.Disposable {
  readonly collection = vscode.languages.createDiagnosticCollection('crawl-studio-designer');
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Match counts per document, for hovers. */
  readonly counts = new Map<string, readonly SiteCount[]>();
  private readonly generation = new Map<string, number>();

  constructor(private readonly pagesFor: PagesFor) {}

  schedule(doc: vscode.TextDocument, delay = DIAGNOSTICS_DEBOUNCE_MS): void {
    if (!isTaskDocument(doc)) return;
    const key = doc.uri.toString();
    clearTimeout(this.timers.get(key));
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        void this.check(doc);
      }, delay),
    );
  }

  /** Validates now; resolves when the Problems panel has the result. */
  async check(doc: vscode.TextDocument): Promise<vscode.Diagnostic[]> {
    const key = doc.uri.toString();
    const gen = (this.generation.get(key) ?? 0) + 1;
    this.generation.set(key, gen);
    const text = doc.getText();
    // On disk, the store's file is checked too (a symlink out of the folder); an untitled document has no folder.
    const { diagnostics } = parseTaskText(
      text,
      doc.uri.fsPath,
      doc.uri.scheme === 'file' ? storeChecksFor(doc.uri.fsPath) : {},
    );
    const out = diagnostics.map((d) => {
      const range = new vscode.Range(doc.positionAt(d.offset), doc.positionAt(Math.max(d.endOffset, d.offset)));
      const diag = new vscode.Diagnostic(
        range,
        d.path ? `${d.path}: ${d.message}` : d.message,
        d.severity === 'error' ? vscode.DiagnosticSeverity.Error : vscode.DiagnosticSeverity.Warning,
      );
      diag.source = 'Crawl Studio';
      return diag;
    });
    let counts: readonly SiteCount[] = [];
    try {
      counts = countSelectors(text, await this.pagesFor(doc));
    } catch {
      // No cached pages to check against: the validator's problems alone.
    }
    if (this.generation.get(key) !== gen || doc.isClosed) return out;
    for (const w of zeroMatchWarnings(counts)) {
      const diag = new vscode.Diagnostic(
        new vscode.Range(doc.positionAt(w.start), doc.positionAt(w.end)),
        w.message,
        vscode.DiagnosticSeverity.Warning,
      );
      diag.source = 'Crawl Studio';
      diag.code = 'no-match';
      out.push(diag);
    }
    this.counts.set(key, counts);
    this.collection.set(doc.uri, out);
    return out;
  }

  forget(doc: vscode.TextDocument): void {
    const key = doc.uri.toString();
    clearTimeout(this.timers.get(key));
    this.timers.delete(key);
    this.counts.delete(key);
    this.collection.delete(doc.uri);
  }

  dispose(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.collection.dispose();
  }
}

/** Red Hat's YAML extension, which reads the schema the manifest gives it (yamlValidation) for task files. */
export const RED_HAT_YAML = 'redhat.vscode-yaml';

/** Whether another extension completes and explains task files from their JSON Schema. */
function schemaHelpElsewhere(): boolean {
  return vscode.extensions.getExtension(RED_HAT_YAML) !== undefined;
}

/**
 * Keys and values from the schema, and page rule names. With Red Hat's YAML extension installed it completes the
 * schema's keys and values itself, so only rule names are offered here: each key was listed twice.
 */
export class TaskCompletions implements vscode.CompletionItemProvider {
  constructor(private readonly schemaElsewhere: () => boolean = schemaHelpElsewhere) {}

  provideCompletionItems(doc: vscode.TextDocument, position: vscode.Position): vscode.CompletionItem[] {
    const text = doc.getText();
    const ctx = completionContext(text, doc.offsetAt(position));
    if (!ctx) return [];
    if (this.schemaElsewhere() && (ctx.kind === 'key' || !isRuleReference(ctx.path))) return [];
    const range = new vscode.Range(doc.positionAt(ctx.start), position);
    if (ctx.kind === 'key') {
      return keyCompletions(ctx.path, ctx.siblings).map((k, i) => {
        const item = new vscode.CompletionItem(k.key, vscode.CompletionItemKind.Property);
        item.detail = `${k.type}${k.required ? ' (required)' : ''}`;
        item.documentation = new vscode.MarkdownString(k.description);
        // Multi-line snippets: VS Code re-indents the following lines to the current line's indentation.
        item.insertText = new vscode.SnippetString(
          k.shape === 'map' ? `${k.key}:\n\t$0` : k.shape === 'list' ? `${k.key}:\n\t- $0` : `${k.key}: $0`,
        );
        item.range = range;
        item.sortText = `${k.required ? 0 : 1}${String(i).padStart(3, '0')}`;
        return item;
      });
    }
    const ruleNames = outlineTask(text).rules.map((r) => r.name);
    return valueCompletions(ctx.path, ruleNames).map((v) => {
      const item = new vscode.CompletionItem(v.value, vscode.CompletionItemKind.EnumMember);
      item.documentation = new vscode.MarkdownString(v.description);
      item.range = range;
      return item;
    });
  }
}

export class TaskHovers implements vscode.HoverProvider {
  constructor(
    private readonly counts: (doc: vscode.TextDocument) => readonly SiteCount[] | undefined,
    /** Red Hat's YAML extension explains keys from the schema already: only match counts are added then. */
    private readonly schemaElsewhere: () => boolean = schemaHelpElsewhere,
  ) {}

  provideHover(doc: vscode.TextDocument, position: vscode.Position): vscode.Hover | null {
    const offset = doc.offsetAt(position);
    const count = countAt(this.counts(doc) ?? [], offset);
    if (count) {
      const r = count.site.range!;
      return new vscode.Hover(
        new vscode.MarkdownString(countMessage(count)),
        new vscode.Range(doc.positionAt(r[0]), doc.positionAt(r[1])),
      );
    }
    if (this.schemaElsewhere()) return null;
    const h = hoverAt(doc.getText(), offset);
    if (!h) return null;
    const md = new vscode.MarkdownString();
    md.appendMarkdown(`**${h.label}** \`${h.type}\`\n\n${h.description}`);
    return new vscode.Hover(md, new vscode.Range(doc.positionAt(h.range[0]), doc.positionAt(h.range[1])));
  }
}

/** The command a "Pick in the preview" fix runs: (task file, rule, page URL, offset of the selector). */
export const PICK_IN_PREVIEW = 'crawlStudio.designer.pickInPreview';

/**
 * Quick fixes for "matches 0 elements" (issue 23, item 10): selectors near it that match on the same page (a typo
 * fixed, a part left out, the links a follow rule's page shows), each with its count; and picking an element in
 * the preview, the cursor on that selector so Insert writes there.
 */
export class ZeroMatchFixes implements vscode.CodeActionProvider {
  static readonly kinds = [vscode.CodeActionKind.QuickFix];

  constructor(
    private readonly counts: (doc: vscode.TextDocument) => readonly SiteCount[] | undefined,
    private readonly pagesFor: PagesFor,
  ) {}

  async provideCodeActions(
    doc: vscode.TextDocument,
    _range: vscode.Range,
    ctx: vscode.CodeActionContext,
  ): Promise<vscode.CodeAction[]> {
    const out: vscode.CodeAction[] = [];
    for (const diag of ctx.diagnostics) {
      if (diag.code !== 'no-match' || diag.source !== 'Crawl Studio') continue;
      const c = countAt(this.counts(doc) ?? [], doc.offsetAt(diag.range.start));
      if (!c || c.count > 0 || !c.site.ruleName) continue;
      const page = (await this.pagesFor(doc)).get(c.site.ruleName);
      const written = doc.getText(diag.range);
      const quote = written.startsWith('"') ? 'double' : written.startsWith("'") ? 'single' : null;
      for (const s of page ? similarSelectors(page, c.site) : []) {
        const fix = new vscode.CodeAction(
          `Use '${s.selector}': ${s.count} match${s.count === 1 ? '' : 'es'} on the page (${s.why})`,
          vscode.CodeActionKind.QuickFix,
        );
        fix.edit = new vscode.WorkspaceEdit();
        fix.edit.replace(doc.uri, diag.range, yamlScalar(s.selector, quote ?? 'double', quote !== null));
        fix.diagnostics = [diag];
        fix.isPreferred = out.length === 0;
        out.push(fix);
      }
      const pick = new vscode.CodeAction(
        'Pick an element in the preview for this selector',
        vscode.CodeActionKind.QuickFix,
      );
      pick.command = {
        title: 'Pick in the preview',
        command: PICK_IN_PREVIEW,
        arguments: [doc.uri, c.site.ruleName, c.url, doc.offsetAt(diag.range.start) + 1],
      };
      pick.diagnostics = [diag];
      out.push(pick);
    }
    return out;
  }
}

export class RulePreviewLenses implements vscode.CodeLensProvider {
  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    return outlineTask(doc.getText()).rules.map((r) => {
      const pos = doc.positionAt(r.span.offset);
      return new vscode.CodeLens(new vscode.Range(pos, pos), {
        title: '$(open-preview) Preview',
        tooltip: `Preview the rule '${r.name}' on a page`,
        command: 'crawlStudio.designer.openPreview',
        arguments: [doc.uri, r.name],
      });
    });
  }
}
