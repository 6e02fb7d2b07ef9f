import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

// The suite's own rules (issue 34), checked on its sources as the architecture test checks src/: a skip goes
// through test/support/skip.ts (so it says why, and fails in CI), no test asserts on the wall clock (a loaded
// machine fails it with nothing wrong; speed goals live in bench/), and every contributed command is run by a test.

const ROOT = 'test';

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== 'fixtures' && name !== 'node_modules') out.push(...sources(p));
    } else if (/\.(ts|mts|cts|js|mjs)$/.test(name)) out.push(p);
  }
  return out;
}

/** `file:line: text` of every line of the test tree matching `re`, but for `except`. */
function offending(re: RegExp, except: readonly string[] = []): string[] {
  const found: string[] = [];
  for (const file of sources(ROOT)) {
    const rel = relative('.', file);
    if (except.includes(rel)) continue;
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (re.test(line)) found.push(`${rel}:${i + 1}: ${line.trim().slice(0, 140)}`);
      });
  }
  return found;
}

describe('the test suite keeps its own rules (issue 34)', () => {
  it('skips only through skipBecause (test/support/skip.ts), which says why and fails in CI', () => {
    assert.deepEqual(
      offending(/\b(this|ctx)\.skip\(\)|\b(it|describe|context)\.skip\(|\bx(it|describe)\(/, [
        'test/support/skip.ts',
        'test/unit/testHygiene.test.ts',
      ]),
      [],
    );
  });

  it('asserts no wall-clock duration (Date.now() or performance.now() differences)', () => {
    // The asserted condition (the first argument), not a message that reports how long something took.
    const clock = /\bassert(\.ok)?\(\s*[^,]*(Date\.now\(\)|performance\.now\(\))\s*-[^,]*[<>]/;
    const elapsed = /\bassert(\.ok)?\(\s*\w*(elapsed|took|duration)\w*\s*<[^,]*,/i;
    assert.deepEqual(offending(clock, ['test/unit/testHygiene.test.ts']), []);
    assert.deepEqual(offending(elapsed, ['test/unit/testHygiene.test.ts']), []);
  });

  it('runs every command the extension contributes somewhere: each is named by a test (its id, or its palette title)', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
      contributes: { commands: { command: string; title: string }[] };
    };
    const nls = JSON.parse(readFileSync('package.nls.json', 'utf8')) as Record<string, string>;
    const text = sources(ROOT)
      .filter((f) => f !== join('test', 'unit', 'testHygiene.test.ts'))
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');
    const unnamed = pkg.contributes.commands.filter((c) => {
      // A UI test runs a command by its palette label, "Crawl Studio: <title>".
      const title = /^%(.*)%$/.test(c.title) ? nls[c.title.slice(1, -1)] : c.title;
      return !text.includes(`'${c.command}'`) && !(title && text.includes(`Crawl Studio: ${title}`));
    });
    assert.deepEqual(
      unnamed.map((c) => c.command),
      [],
    );
  });
});
