// Which request headers a task file may set, and what their values may hold. Pure.
//
// A header value is one line: a CR or LF in it would end the header and start another (request splitting), and
// the HTTP client refuses the request outright, which used to surface as a page "skipped (robots)" with no request
// sent. Other control characters are refused as RFC 9110 does (a horizontal tab is allowed). A header name is an
// RFC 9110 token.
//
// Some headers are the connection's, not the task's: `Host` (it comes from the URL; setting it would send a
// request for one site to another's address, past the scope and robots.txt checks made on the URL), the framing
// ones (`Content-Length`, `Transfer-Encoding`: the body sets them) and the hop-by-hop ones (`Connection`,
// `Keep-Alive`, `Upgrade`, `TE`, `Trailer`, `Expect`, `Proxy-Connection`), and `Proxy-Authorization` (proxy
// credentials go in proxy.urls, to the proxy only). None is settable, with no opt-in: a crawl of a virtual host
// names that host in its URLs.

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Control characters but the tab (what is not a tab, printable ASCII or beyond ASCII): U+0000-U+0008, U+000A-U+001F, U+007F.
const CONTROL = /[^\t\x20-\x7e\x80-\uffff]/;

const NOT_SETTABLE: Readonly<Record<string, string>> = {
  host: "the Host header comes from the URL: put the host in the URLs you crawl (a Host of another site would send its requests to this URL's address, past the scope and robots.txt checks)",
  'content-length': 'the body sets Content-Length',
  'transfer-encoding': 'the body sets Transfer-Encoding',
  connection: 'Connection is a hop-by-hop header the HTTP client sets',
  'keep-alive': 'Keep-Alive is a hop-by-hop header the HTTP client sets',
  upgrade: 'Upgrade is a hop-by-hop header the HTTP client sets',
  te: 'TE is a hop-by-hop header the HTTP client sets',
  trailer: 'Trailer is a hop-by-hop header the HTTP client sets',
  expect: 'Expect is a hop-by-hop header the HTTP client sets',
  'proxy-connection': 'Proxy-Connection is a hop-by-hop header the HTTP client sets',
  'proxy-authorization':
    'proxy credentials go in proxy.urls (http://${CRAWL_STUDIO_PROXY_USER}:${CRAWL_STUDIO_PROXY_PASSWORD}@proxy:3128), to the proxy only',
};

function shown(text: string): string {
  const j = JSON.stringify(text.length > 60 ? text.slice(0, 59) + '…' : text);
  return j;
}

/** Why a task file may not set the header `name`, or null. */
export function headerNameProblem(name: string): string | null {
  if (!TOKEN.test(name))
    return `${shown(name)} is not a header name: a name is letters, digits and !#$%&'*+-.^_\`|~, with no space, colon or line break`;
  const why = NOT_SETTABLE[name.toLowerCase()];
  return why === undefined ? null : `'${name}' cannot be set: ${why}`;
}

/** Why a header value (as written, or once its variables are filled in) cannot be sent, or null. */
export function headerValueProblem(value: string): string | null {
  const m = CONTROL.exec(value);
  if (!m) return null;
  const what =
    m[0] === '\r' || m[0] === '\n'
      ? 'a line break (CR or LF)'
      : `the control character U+${m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
  return `the value holds ${what}: a header value is one line of text (a line break would end the header and start another)`;
}
