import { strict as assert } from 'node:assert';
import type { RunInfo } from '../../src/frontier/types';
import { describeRunPhase, needsWorkerCount, phaseWord, runPhase } from '../../src/observe/runPhase';

// Whether a run is alive, from its driver's lease and the workers' beats, not from its meta's "running" (issue 32,
// item 2: after a window reload every view said "running" with frozen counts).

const run = (state: RunInfo['state'], extra: Partial<RunInfo> = {}): RunInfo => ({
  run: 'r1',
  state,
  startedAt: 1_000,
  finishedAt: state === 'finished' || state === 'stopped' ? 9_000 : null,
  pausedMs: 0,
  idleSince: null,
  bucketBits: 12,
  file: '/w/t.crawl.yaml',
  ...extra,
});
const holder = { owner: 'o1', front: 'VS Code', host: 'devbox', pid: 4242, since: 1_000 };

describe('run phase (observe/runPhase.ts)', () => {
  it('a running run whose driver holds its lease is running, driven by it', () => {
    const p = runPhase(run('running'), false, { holder, gone: false });
    assert.deepEqual(p, { kind: 'running', driver: holder, workers: 0 });
    assert.equal(describeRunPhase(p), 'Running, driven by VS Code (pid 4242, devbox).');
  });

  it('a running run whose driver died (lease expired, or its pid gone on this machine) is interrupted', () => {
    const gone = runPhase(run('running'), false, { holder, gone: true });
    assert.equal(gone.kind, 'interrupted');
    assert.match(
      describeRunPhase(gone),
      /^Interrupted: its driver, VS Code \(pid 4242, devbox\), is gone\. .*Start Crawl .* resumes it, Stop ends it\.$/,
    );
    const expired = runPhase(run('running', { idleSince: 5_000 }), false, null);
    assert.deepEqual(expired, { kind: 'interrupted', since: 5_000, lastDriver: null });
    assert.equal(phaseWord(expired), 'interrupted');
  });

  it('nobody drives it but workers of the fleet still take its pages: running, and it says who will finish it', () => {
    const p = runPhase(run('running'), false, null, 3);
    assert.deepEqual(p, { kind: 'running', driver: null, workers: 3, writer: null });
    assert.match(describeRunPhase(p), /^Running on 3 workers, but no `crawl-studio run` or editor drives it/);
  });

  it('nobody drives it, but a `crawl-studio writer` will finish it once the fleet drains it: said so', () => {
    const writer = { host: 'store-box', pid: 77 };
    const p = runPhase(run('running', { idleSince: 5_000 }), false, null, 1, writer);
    assert.deepEqual(p, { kind: 'running', driver: null, workers: 1, writer });
    assert.equal(
      describeRunPhase(p),
      'Running on 1 worker, finished and stored by `crawl-studio writer` (pid 77, store-box) once they drain it.',
    );
    // A writer and no worker: nothing takes its pages, and that is what is said.
    assert.equal(runPhase(run('running', { idleSince: 5_000 }), false, null, 0, writer).kind, 'interrupted');
  });

  it('a finished run that a retry or an enqueue reopened waits for workers: running, not interrupted', () => {
    const p = runPhase(run('running', { reopened: true }), false, null);
    assert.deepEqual(p, { kind: 'running', driver: null, workers: 0, writer: null });
    assert.match(describeRunPhase(p), /^Reopened .*no worker takes its pages: Start Crawl/);
  });

  it('finished, stopped and paused are what the run says, whatever its driver', () => {
    assert.deepEqual(runPhase(run('finished'), false, null), { kind: 'finished', at: 9_000, next: null });
    assert.deepEqual(runPhase(run('stopped'), true, { holder, gone: false }), {
      kind: 'stopped',
      at: 9_000,
      next: null,
    });
    assert.deepEqual(runPhase(run('running'), true, null), { kind: 'paused' });
    assert.deepEqual(runPhase(null, false, null), { kind: 'none' });
  });

  it("a scheduled task's ended run says when its schedule starts the next, in UTC to the second", () => {
    const next = Date.UTC(2026, 11, 7, 19, 22, 46, 715);
    const finished = runPhase(run('finished'), false, null, 0, null, next);
    assert.equal(describeRunPhase(finished), 'Finished. Its schedule starts the next run at 2026-12-07T19:22:46Z.');
    const stopped = runPhase(run('stopped'), false, null, 0, null, next);
    assert.equal(describeRunPhase(stopped), 'Stopped. Its schedule starts the next run at 2026-12-07T19:22:46Z.');
    assert.equal(describeRunPhase(runPhase(run('finished'), false, null)), 'Finished.');
  });

  it('a paused schedule says its next run waits for the resume, a stopped one for the next start', () => {
    const next = Date.UTC(2026, 11, 7, 19, 22, 46, 715);
    const paused = runPhase(run('finished'), true, null, 0, null, next);
    assert.deepEqual(paused, { kind: 'finished', at: 9_000, next: { at: next, held: true } });
    assert.equal(
      describeRunPhase(paused),
      "Finished. Its schedule's next run, due at 2026-12-07T19:22:46Z, waits until the queue is resumed.",
    );
    // Stop pauses the queues, and a stopped run cannot be resumed: only a start lets the schedule go on.
    assert.equal(
      describeRunPhase(runPhase(run('stopped'), true, null, 0, null, next)),
      'Stopped. Its schedule is held until the task is started again (Start Crawl, `crawl-studio run`), which begins a new run.',
    );
  });

  it("counts the workers only for a run nobody drives (the driver's own polls never read the fleet)", () => {
    assert.equal(needsWorkerCount(run('running'), false, { holder, gone: false }), false);
    assert.equal(needsWorkerCount(run('running'), false, { holder, gone: true }), true);
    assert.equal(needsWorkerCount(run('running'), false, null), true);
    assert.equal(needsWorkerCount(run('running'), true, null), false);
    assert.equal(needsWorkerCount(run('finished'), false, null), false);
  });
});
