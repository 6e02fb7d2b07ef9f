import { format } from 'node:util';

// How test output in the extension host is told apart from the workbench's own log lines on the code-server
// route: the workbench forwards the extension host's console to codeAutomationLog together with its own logs,
// with no marker. The harness passes a random tag in this variable; the suite prefixes every console line with
// it while it runs, and the harness routes tagged lines to `onTestOutput`. Without the variable (the
// @vscode/test-electron route, whose output goes straight to stdout) nothing is tagged.
export const LOG_TAG_ENV = 'CRAWL_STUDIO_LOG_TAG';

const METHODS = ['log', 'info', 'warn', 'error', 'debug'] as const;

/** Prefixes console output with `tag` (one preformatted string after it) until the returned function runs. */
export function tagConsole(tag: string | undefined): () => void {
  if (!tag) return () => undefined;
  // VS Code's extension host defines the console methods as getters with a no-op setter, so plain assignment
  // is ignored: redefine the properties, and put the original descriptors back afterwards.
  const saved = METHODS.map((m) => Object.getOwnPropertyDescriptor(console, m));
  const patched: Array<(typeof METHODS)[number]> = [];
  for (const m of METHODS) {
    const orig = console[m].bind(console);
    try {
      Object.defineProperty(console, m, {
        configurable: true,
        enumerable: true,
        writable: true,
        value: (...args: unknown[]) => orig.call(console, tag, format(...args)),
      });
      patched.push(m);
    } catch {
      // not configurable: this method stays untagged
    }
  }
  return () => {
    for (const m of patched) {
      const d = saved[METHODS.indexOf(m)];
      if (d) Object.defineProperty(console, m, d);
      else delete (console as unknown as Record<string, unknown>)[m];
    }
  };
}

/** The text of a tagged line, or undefined when `args` did not come from tagConsole(tag). */
export function untag(tag: string, args: readonly unknown[]): string | undefined {
  return args.length === 2 && args[0] === tag && typeof args[1] === 'string' ? args[1] : undefined;
}
