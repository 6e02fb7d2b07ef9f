import { strict as assert } from 'node:assert';
import { scalingLines, type WorkerScaling } from '../../src/observe/scaling';
import { workerSeen } from '../../src/observe/workerRates';

// `status` lists a task's workers from the same heartbeats as the monitor and the Workers view, and must call each
// what they call it: a worker killed 40 s ago was "gone (silent)" in the monitor and "live" in `status`, its requests
// still counted in flight.
describe('scalingLines: the workers `status` prints', () => {
  const now = 1_800_000_000_000;
  const worker = (id: string, silentForMs: number, concurrency: number): WorkerScaling => ({
    id,
    concurrency,
    loopBusy: 0.07,
    autoscale: null,
    lastSeen: now - silentForMs,
    warnings: [],
  });

  it('counts only beating workers live, and says which are gone (silent), as the monitor does', () => {
    const workers = [worker('vm:1', 2_000, 16), worker('vm:2', 40_000, 4)];
    assert.deepEqual(
      workers.map((w) => workerSeen(w, now).state),
      ['live', 'silent'],
    );
    assert.deepEqual(scalingLines({ workers, processes: null }, now), [
      'workers: 1 live, 16 request(s) in flight at most; 1 gone (silent)',
      '  vm:1: concurrency 16, event loop 7% busy',
      '  vm:2: gone (silent), last seen 40 s ago; concurrency was 4',
    ]);
  });

  it("says a worker's warning under it", () => {
    const w = {
      ...worker('vm:1', 1_000, 16),
      warnings: ["books: this worker's task file (/srv/b.crawl.yaml) differs …"],
    };
    assert.deepEqual(scalingLines({ workers: [w], processes: null }, now).slice(1), [
      '  vm:1: concurrency 16, event loop 7% busy',
      "    warning: books: this worker's task file (/srv/b.crawl.yaml) differs …",
    ]);
  });

  it('says nothing of silence while every worker beats', () => {
    const lines = scalingLines({ workers: [worker('vm:1', 4_000, 8), worker('vm:2', 0, 8)], processes: null }, now);
    assert.equal(lines[0], 'workers: 2 live, 16 request(s) in flight at most');
  });
});
