import { parseArgs } from 'node:util';

// The CLI as data: each command is one entry (name, arguments, options with their help), parsed by Node's own
// util.parseArgs, so `COMMAND --help`, the usage line and the option checks come from the same table and a new
// command is one more entry in commands/index.ts.

export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
  /** May be given more than once (its value is then a list). */
  readonly multiple?: boolean;
  /** The value's placeholder in help (`N`, `URL`); string options only. */
  readonly value?: string;
  readonly help: string;
}

export type OptionTable = Readonly<Record<string, OptionSpec>>;

type ValueOf<O extends OptionSpec> = O['type'] extends 'boolean'
  ? boolean
  : O['multiple'] extends true
    ? string[]
    : string;
export type OptionValues<O extends OptionTable> = { -readonly [K in keyof O]?: ValueOf<O[K]> };

export interface CommandSpec<O extends OptionTable = OptionTable> {
  readonly name: string;
  /** The positional arguments as shown in help: `<task.crawl.yaml> <url>...`. */
  readonly args: string;
  /** One line for the command list. */
  readonly summary: string;
  /** More lines for `COMMAND --help`. */
  readonly details?: string;
  readonly options: O;
  run(values: OptionValues<O>, positionals: string[], argv: readonly string[]): Promise<number> | number;
}

/** A command entry; typed by its own options, stored untyped in the table. */
export function command<O extends OptionTable>(spec: CommandSpec<O>): CommandSpec {
  return spec;
}

/** A wrong command line: exit 2 with the command's usage. */
/**
 * A wrong command line. `help` is what follows the message: a command's help (a wrong option or argument count), the
 * overview (an unknown command), or nothing (a wrong value, whose message says what is expected: 70 lines of
 * overview under "--since 'x' is neither a run nor a date" buried it).
 */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly help?: CommandSpec | 'overview',
  ) {
    super(message);
  }
}

/** Every command takes these; handled before its own parsing, so `test --help` never reads a file named --help. */
const HELP_OPTION: OptionSpec = { type: 'boolean', short: 'h', help: 'show this help and exit' };

/** True when the arguments ask for help (before a `--` that ends the options). */
export function wantsHelp(argv: readonly string[]): boolean {
  for (const a of argv) {
    if (a === '--') return false;
    if (a === '--help' || a === '-h') return true;
  }
  return false;
}

export function parseCommand(
  spec: CommandSpec,
  argv: readonly string[],
): { values: OptionValues<OptionTable>; positionals: string[] } {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = {};
  for (const [name, o] of Object.entries(spec.options))
    options[name] = { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) };
  try {
    const { values, positionals } = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options });
    // Typed per command by `command()`: parseArgs gives each option the type its entry says.
    return { values: values as OptionValues<OptionTable>, positionals };
  } catch (err) {
    // parseArgs's own message ("Unknown option '--x'. To specify a positional…"): its first sentence is the point.
    const msg = err instanceof Error ? err.message.replace(/\. To specify a positional.*$/s, '') : String(err);
    throw new UsageError(`${spec.name}: ${msg}`, spec);
  }
}

function optionLabel(name: string, o: OptionSpec): string {
  const long = `--${name}${o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''}`;
  return o.short ? `-${o.short}, ${long}` : `    ${long}`;
}

/** `crawl-studio COMMAND --help`. */
export function commandHelp(spec: CommandSpec): string {
  const rows = [...Object.entries(spec.options), ['help', HELP_OPTION] as const].map(
    ([name, o]) => [optionLabel(name, o), o.help] as const,
  );
  const width = Math.min(34, Math.max(...rows.map(([l]) => l.length)));
  const lines = [
    `Usage: crawl-studio ${spec.name}${spec.args ? ` ${spec.args}` : ''}${rows.length > 1 ? ' [options]' : ''}`,
    '',
    spec.summary,
  ];
  if (spec.details) lines.push('', spec.details);
  lines.push('', 'Options:');
  for (const [label, help] of rows) {
    if (label.length > width) lines.push(`  ${label}`, `  ${' '.repeat(width)}  ${help}`);
    else lines.push(`  ${label.padEnd(width)}  ${help}`);
  }
  return lines.join('\n');
}

/** `crawl-studio --help`: every command with its summary. */
export function overviewHelp(
  commands: readonly CommandSpec[],
  exitCodes: readonly (readonly [number, string])[],
): string {
  return [
    'crawl-studio — design, run and observe web crawls on Redis',
    '',
    'Usage: crawl-studio COMMAND [arguments] [options]',
    "       crawl-studio COMMAND --help    the command's arguments and options",
    '       crawl-studio --version',
    '',
    'Commands:',
    ...commands.flatMap((c) => [`  crawl-studio ${c.name}${c.args ? ` ${c.args}` : ''}`, `      ${c.summary}`]),
    '',
    'Exit codes:',
    ...exitCodes.map(([code, what]) => `  ${String(code).padStart(3)}  ${what}`),
  ].join('\n');
}
