// A command-line flag given a value it cannot take: "--concurrency '0': expected …". A wrong command line, so the CLI
// exits 2 with the message alone (cli/main.ts), as for a wrong option; these flags are read where they are used
// (the worker, the autoscaler's ranges), below the CLI, so the error lives here rather than in cli/spec.ts.

export class FlagValueError extends Error {
  constructor(
    readonly flag: string,
    readonly value: string,
    why: string,
  ) {
    super(`--${flag} '${value}': ${why}`);
    this.name = 'FlagValueError';
  }
}
