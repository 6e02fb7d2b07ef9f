import { setFlagsFromString } from 'node:v8';

/**
 * Keeps this process's WebAssembly on V8's baseline compiler (Liftoff). The CLI's one wasm module is SQLite, the
 * embedded store: V8 tiers its hot functions up to TurboFan in the background, and recompiling SQLite's large
 * functions took 0.45-0.6 s of CPU in a 2,202-page crawl (perf, every thread of the CLI) — more than the writer's
 * own work, on a machine whose cores the workers need. Baseline code writes batches as fast here (bench
 * micro-store, within its noise), so the compile is saved outright. Not for worker processes: their wasm is
 * undici's HTTP parser, which runs hot and is faster tiered up (perf: the worker's own CPU rose more than its
 * compile fell). Must run before any wasm module is compiled.
 */
export function keepWasmOnBaselineTier(): void {
  setFlagsFromString('--liftoff-only');
}
