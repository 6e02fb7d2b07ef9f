import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { COMMANDS } from '../../src/cli/commands';
import { EXIT, EXIT_CODE_DOCS } from '../../src/cli/exitCodes';
import { tempDir } from '../support/tempDir';

// CLI conventions (issue 31, item 7): `--version`, and `COMMAND --help` / `-h` for every command of the table, listing
// each of its options, exit 0, without doing the command. The commands come from the same table the CLI dispatches
// on, so a command added there is walked here too.

const run = promisify(execFile);
const CLI = resolve('dist/cli.js');

async function cli(args: string[], cwd?: string): Promise<{ code: number; out: string; err: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { timeout: 30_000, cwd });
    return { code: 0, out: stdout, err: stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, out: err.stdout, err: err.stderr };
  }
}

describe('CLI conventions: --help for every command, --version, exit codes (issue 31, item 7)', function () {
  this.timeout(120_000);

  it('--version prints the package version', async () => {
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    const r = await cli(['--version']);
    assert.equal(r.code, 0);
    assert.equal(r.out.trim(), version);
  });

  for (const spec of COMMANDS) {
    it(`${spec.name} --help and -h list every option and exit 0`, async () => {
      for (const flag of ['--help', '-h']) {
        const r = await cli([spec.name, flag]);
        assert.equal(r.code, 0, `${spec.name} ${flag}: exit ${r.code}\n${r.out}${r.err}`);
        assert.match(r.out, new RegExp(`^Usage: crawl-studio ${spec.name}\\b`, 'm'), r.out);
        for (const name of Object.keys(spec.options))
          assert.match(r.out, new RegExp(`--${name}\\b`), `${spec.name} --help lacks --${name}`);
        assert.match(r.out, /--help/);
      }
    });
  }

  it('the overview lists every command and every exit code', async () => {
    const r = await cli(['--help']);
    assert.equal(r.code, 0);
    for (const spec of COMMANDS) assert.match(r.out, new RegExp(`crawl-studio ${spec.name}\\b`));
    for (const [code] of EXIT_CODE_DOCS) assert.match(r.out, new RegExp(`^ +${code} `, 'm'));
  });

  it('`test --help` prints help and does not read a file named --help; a help request ahead of a bad option wins', async () => {
    const dir = tempDir('cs-help-');
    // A file named --help that `test` would fail on if it read it.
    writeFileSync(join(dir, '--help'), 'not: a task');
    const r = await cli(['test', '--help'], dir);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^Usage: crawl-studio test/m);
    assert.doesNotMatch(r.err, /--help/);
    const bad = await cli(['run', '--no-such-option']);
    assert.equal(bad.code, EXIT.USAGE);
    assert.match(bad.err, /Unknown option '--no-such-option'/);
    assert.match(bad.err, /Usage: crawl-studio run/);
  });

  it('an unknown command exits with the usage code', async () => {
    const r = await cli(['no-such-command']);
    assert.equal(r.code, EXIT.USAGE);
    assert.match(r.err, /unknown command 'no-such-command'/);
  });

  it('a task file that cannot be read is a wrong command line (exit 2), said in words, for every command that loads one', async () => {
    const dir = tempDir('cs-unreadable-');
    const missing = join(dir, 'nope.crawl.yaml');
    for (const command of ['run', 'worker', 'status', 'failures', 'export']) {
      // No Redis is reached: the file is read first.
      const r = await cli([command, missing, ...(command === 'export' ? [] : ['--redis', 'redis://127.0.0.1:1'])]);
      assert.equal(r.code, EXIT.USAGE, `${command}: exit ${r.code}\n${r.err}`);
      assert.equal(r.err.trim(), `crawl-studio: cannot read task file ${missing}: no such file (ENOENT)`, command);
    }
    const folder = await cli(['status', dir, '--redis', 'redis://127.0.0.1:1']);
    assert.equal(folder.code, EXIT.USAGE, folder.err);
    assert.match(folder.err, /: a folder, not a file \(EISDIR\)$/m);
    const validate = await cli(['validate', missing]);
    assert.equal(validate.err.trim(), `${missing}: cannot read: no such file (ENOENT)`);
  });

  it('a flag given a value it cannot take is a wrong command line (exit 2), its message alone', async () => {
    const task = join(tempDir('cs-flags-'), 'flags.crawl.yaml');
    writeFileSync(task, 'name: flags\nstart: [http://127.0.0.1:1/]\nrules:\n  - name: page\n');
    const cases: [string[], RegExp][] = [
      // 0 is a driver without local workers (docs/deploy.md); a word is not a number.
      [
        ['run', task, '--workers', 'many'],
        /^crawl-studio: --workers 'many': expected a whole number \(0: no local worker\), 'auto', or MIN\.\.MAX/,
      ],
      [['worker', task, '--concurrency', 'lots'], /^crawl-studio: --concurrency 'lots': expected/],
      [['worker', task, '--drain-timeout', 'soon'], /^crawl-studio: --drain-timeout 'soon': expected a duration/],
      [['worker', task, '--health', 'x'], /^crawl-studio: --health 'x': expected PORT or HOST:PORT/],
      [
        ['worker', task, '--log-stats', '0.5s'],
        /^crawl-studio: --log-stats '0.5s': expected a duration of at least 1s/,
      ],
      [['worker', task, '--log-format', 'xml'], /^crawl-studio: --log-format 'xml': expected human or json/],
      [['worker', task, '--log-level', 'debug'], /^crawl-studio: --log-level 'debug': expected info, warn or error/],
      [['worker', task, '--lock-duration', '1.5'], /^crawl-studio: --lock-duration '1.5': expected a whole number/],
    ];
    for (const [args, message] of cases) {
      // No Redis is reached: the flags are read first.
      const r = await cli([...args, '--redis', 'redis://127.0.0.1:1']);
      assert.equal(r.code, EXIT.USAGE, `${args.join(' ')}: exit ${r.code}\n${r.err}`);
      assert.match(r.err, message);
      assert.equal(r.err.trim().split('\n').length, 1, r.err);
    }
  });
});
