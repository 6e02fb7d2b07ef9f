// A problem in a task file, located precisely enough for a terminal line ("file:line:col") and for an
// editor range (offsets). Several are reported at once so a person fixes a file in one pass.

export type Severity = 'error' | 'warning';

export interface TaskDiagnostic {
  readonly file: string;
  /** Dotted path of the field, e.g. "rules[0].follow[1].selector"; "" for the whole file. */
  readonly path: string;
  readonly message: string;
  readonly severity: Severity;
  /** 1-based, as editors and compilers print them. */
  readonly line: number;
  readonly column: number;
  readonly endLine: number;
  readonly endColumn: number;
  /** 0-based character offsets into the source text. */
  readonly offset: number;
  readonly endOffset: number;
}

export function formatDiagnostic(d: TaskDiagnostic): string {
  const where = d.path ? `${d.path}: ` : '';
  return `${d.file}:${d.line}:${d.column}: ${d.severity}: ${where}${d.message}`;
}

/** Thrown where a task is required but its file has errors; carries every diagnostic. */
export class TaskFileError extends Error {
  constructor(
    readonly file: string,
    readonly diagnostics: readonly TaskDiagnostic[],
  ) {
    const errors = diagnostics.filter((d) => d.severity === 'error');
    super(
      `${file} has ${errors.length} error${errors.length === 1 ? '' : 's'}:\n` +
        errors.map((d) => '  ' + formatDiagnostic(d)).join('\n'),
    );
    this.name = 'TaskFileError';
  }
}

export function pathToString(segments: readonly (string | number)[]): string {
  let out = '';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else out += out ? `.${s}` : s;
  }
  return out;
}
