import assert from 'node:assert/strict';
import { workerExitCause, workerExitMessage, workerExitReport } from '../../src/run/workerExit';

describe('an unexpected worker exit, said', () => {
  it('names the last error line as the cause, not the start-up line or a stack frame', () => {
    const lines = [
      '[info] worker started for shop (concurrency 4)',
      'file:///x/dist/worker.js:10',
      "TypeError: Cannot read properties of undefined (reading 'url')",
      '    at handle (file:///x/dist/worker.js:10:5)',
      '    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)',
    ];
    assert.equal(workerExitCause(lines), "TypeError: Cannot read properties of undefined (reading 'url')");
    assert.equal(
      workerExitMessage(7, 1, null, lines),
      "worker 7 exited unexpectedly (code 1): TypeError: Cannot read properties of undefined (reading 'url')",
    );
  });

  it('a tagged error line is a cause without its tag', () => {
    assert.equal(
      workerExitCause(['[info] worker started', '[error] store: disk full', '[info] closing']),
      'store: disk full',
    );
  });

  it('a worker killed after its start-up line says it printed no error, never quoting that line', () => {
    const lines = ['[info] worker started for shop (concurrency 4)'];
    const msg = workerExitMessage(9, null, 'SIGKILL', lines);
    assert.equal(msg, 'worker 9 exited unexpectedly (SIGKILL): killed by SIGKILL, it printed no error');
    assert.doesNotMatch(msg, /worker started/);
    assert.equal(workerExitMessage(9, 3, null, []), 'worker 9 exited unexpectedly (code 3): it printed no error');
  });

  it('a report for a terminal adds the last five lines below the message', () => {
    const lines = ['a', 'b', 'c', 'd', 'e', '[error] boom'];
    assert.equal(
      workerExitReport(1, 1, null, lines),
      'worker 1 exited unexpectedly (code 1): boom; last lines:\n  b\n  c\n  d\n  e\n  [error] boom',
    );
  });

  it("reads the worker's log lines in either format, and a task file's mistake, as causes", () => {
    const human = [
      '2026-12-07T12:00:00.000Z info worker vm:1 on redis://127.0.0.1:6379: tasks t, concurrency 16',
      '2026-12-07T12:00:01.000Z error store: disk full',
    ];
    assert.equal(workerExitCause(human), 'store: disk full');
    const json = [
      '{"time":"2026-12-07T12:00:00.000Z","level":"info","event":"worker-started","message":"worker vm:1 on …"}',
      '{"time":"2026-12-07T12:00:01.000Z","level":"error","event":"redis-refused","message":"permission denied"}',
    ];
    assert.equal(workerExitCause(json), 'permission denied');
    // A worker started after its task file broke: this said "it printed no error" under the file's error.
    const broken = [
      '/tasks/t.crawl.yaml has 1 error:',
      "  /tasks/t.crawl.yaml:3:8: error: rules: must be a list, not 'oops'",
    ];
    assert.equal(
      workerExitMessage(5, 2, null, broken),
      "worker 5 exited unexpectedly (code 2): /tasks/t.crawl.yaml:3:8: error: rules: must be a list, not 'oops'",
    );
  });
});
