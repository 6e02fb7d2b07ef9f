// One lazy handle on the engine (see engine.ts).
type Engine = typeof import('./engine');
let loading: Promise<Engine> | null = null;

export function engine(): Promise<Engine> {
  loading ??= import('./engine');
  return loading;
}
