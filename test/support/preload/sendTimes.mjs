// Preloaded into worker processes by tests (NODE_OPTIONS=--import): appends one line per HTTP request, at the
// moment undici has written its headers to the socket, to the file CS_SEND_TIMES names: `<epoch ms> <origin> <path>`.
// That is the request's send time where it is sent, not when a test server happens to read it. Test-only: nothing
// in src/ knows of it.
import { subscribe } from 'node:diagnostics_channel';
import { appendFileSync } from 'node:fs';

const file = process.env.CS_SEND_TIMES;
if (file) {
  subscribe('undici:client:sendHeaders', ({ request }) => {
    appendFileSync(file, `${performance.timeOrigin + performance.now()} ${request.origin} ${request.path}\n`);
  });
}
