// Reads a Containerfile (deploy/worker/Containerfile) for the tests that run it without a container runtime: its
// ARG defaults, WORKDIR, RUN steps and the exec forms of ENTRYPOINT and CMD. Only the subset that file uses.

export interface ContainerRecipe {
  readonly args: Readonly<Record<string, string>>;
  readonly workdir: string;
  readonly run: readonly string[];
  readonly entrypoint: readonly string[];
  readonly cmd: readonly string[];
}

export function containerRecipe(text: string): ContainerRecipe {
  const args: Record<string, string> = {};
  const run: string[] = [];
  let workdir = '/';
  let entrypoint: string[] = [];
  let cmd: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const [, word, rest] = /^(\S+)\s+(.*)$/.exec(line) ?? [];
    if (!word || rest === undefined) continue;
    if (line.endsWith('\\')) throw new Error(`continuation lines are not read here: ${line}`);
    if (word === 'ARG') {
      const [k, v = ''] = rest.split('=');
      args[k!] = v;
    } else if (word === 'WORKDIR') workdir = rest;
    else if (word === 'RUN') run.push(rest);
    else if (word === 'ENTRYPOINT') entrypoint = JSON.parse(rest) as string[];
    else if (word === 'CMD') cmd = JSON.parse(rest) as string[];
  }
  return { args, workdir, run, entrypoint, cmd };
}
