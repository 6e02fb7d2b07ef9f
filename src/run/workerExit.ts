// How an unexpected worker exit is said, in the same words by `run`, `runCrawl()` and the editor's toast. The cause
// is the worker's last error line, not simply its last lines: a worker killed early had printed only its start-up
// line ("worker started …"), which the toast used to quote as if it explained the crash (issue 32, item 7).

/**
 * A worker's output line without its time and level (or `[level] ` tag), and that level: its log lines in either
 * --log-format (core/logLine.ts), a task file's mistakes (`file:3:8: error: …`), Node's own lines.
 */
function parse(line: string): { level: string; text: string } {
  const human = /^\d{4}-\d\d-\d\dT[\d:.]+Z (info|warn|error|debug) (.*)$/.exec(line);
  if (human) return { level: human[1]!, text: human[2]! };
  const json = jsonLine(line);
  if (json) return json;
  const m = /^\[(info|warn|error|debug)\]\s?(.*)$/.exec(line);
  if (m) return { level: m[1]!, text: m[2]! };
  if (/^.+:\d+:\d+: error: /.test(line)) return { level: 'error', text: line };
  // Untagged lines come from Node itself: an uncaught exception's message and stack.
  return { level: /\w*Error\b|\bERR_[A-Z_]+|^\s*at .+:\d+:\d+\)?$/.test(line) ? 'error' : 'info', text: line };
}

function jsonLine(line: string): { level: string; text: string } | null {
  if (!line.startsWith('{')) return null;
  try {
    const r = JSON.parse(line) as { level?: unknown; message?: unknown };
    return typeof r.level === 'string' && typeof r.message === 'string' ? { level: r.level, text: r.message } : null;
  } catch {
    return null;
  }
}

/**
 * The line that says why the worker died: the last error line that is not a stack frame (the message, not `at …`),
 * or null when it printed none (a SIGKILL from outside, the out-of-memory killer).
 */
export function workerExitCause(lastLines: readonly string[]): string | null {
  for (let i = lastLines.length - 1; i >= 0; i--) {
    const { level, text } = parse(lastLines[i]!);
    if (level === 'error' && !/^\s*at\s/.test(text) && text.trim()) return text.trim();
  }
  return null;
}

/** `worker 123 exited unexpectedly (SIGKILL): <cause>`, or `…: it printed no error` when it said none. */
export function workerExitMessage(
  pid: number,
  code: number | null,
  signal: string | null,
  lastLines: readonly string[],
): string {
  const how = signal ?? `code ${code}`;
  const cause = workerExitCause(lastLines);
  return `worker ${pid} exited unexpectedly (${how}): ${cause ?? (signal ? `killed by ${signal}, it printed no error` : 'it printed no error')}`;
}

/** The message, then the worker's last lines indented, for a terminal or a log (not for a toast). */
export function workerExitReport(
  pid: number,
  code: number | null,
  signal: string | null,
  lastLines: readonly string[],
): string {
  const tail = lastLines.slice(-5);
  return tail.length
    ? `${workerExitMessage(pid, code, signal, lastLines)}; last lines:\n  ${tail.join('\n  ')}`
    : workerExitMessage(pid, code, signal, lastLines);
}
