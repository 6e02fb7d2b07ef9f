import assert from 'node:assert/strict';
import { preparePage } from '../../src/core/designer/page';
import { TooDeepError } from '../../src/core/extract/dom';
import { parseTask } from '../../src/core/task/parse';
import type { FetchedPage } from '../../src/worker/fetcher';
import { logIn } from '../../src/worker/loginForm';
import { fetchOptions } from '../../src/worker/processor';

// Every parse of a fetched page outside the analysis thread (the designer's preview in the extension host, a login
// on a worker's main thread) parses as the thread does: a page nested too deeply fails at once with the thread's
// reason, where cheerio.load took minutes over it (htmlparser2's open-element stack is quadratic in the depth).
// The worker's block check is tested with a real worker in test/integration/sessionBlocks.test.ts.

const DEEP = `<html><body>${'<div>'.repeat(400_000)}x`;
const LOGIN = 'http://127.0.0.1:9/login';

function answer(body: string): FetchedPage {
  return {
    url: LOGIN,
    finalUrl: LOGIN,
    status: 200,
    contentType: 'text/html',
    isHtml: true,
    body,
    bytes: body.length,
    redirects: 0,
  };
}

describe('hostile markup outside the analysis thread', () => {
  it("the designer's preview refuses a page nested too deeply, with the worker's reason", () => {
    assert.throws(() => preparePage(DEEP, 'http://127.0.0.1:9/deep'), TooDeepError);
    // Within the limit, the same page is shown.
    const page = preparePage(`<html><body>${'<div>'.repeat(5_000)}<h1>x</h1>`, 'http://127.0.0.1:9/ok');
    assert.equal(page.$('h1').text(), 'x');
  }).timeout(20_000);

  it('a login whose page is nested too deeply fails with why, on the first page it reads', async () => {
    const text = `name: hostile-login\nstart: [http://127.0.0.1:9/]\nlogin:\n  url: ${LOGIN}\n  form:\n    fields: { user: u, password: p }\nrules:\n  - name: r\n`;
    const { task, diagnostics } = parseTask(text, '/tmp/hostile-login.crawl.yaml');
    assert.ok(task?.login, diagnostics.map((d) => d.message).join('\n'));
    const why = await logIn(task.login, fetchOptions(task), {}, () => Promise.resolve(answer(DEEP)));
    assert.equal(
      why,
      `${LOGIN} could not be read: the page nests elements too deeply to extract (more than 20,000 levels)`,
    );
  }).timeout(20_000);
});
