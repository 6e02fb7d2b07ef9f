// The monitor's page: plain HTML, one stylesheet and one script of its own (media/monitor/main.ts, bundled by
// esbuild), nothing from elsewhere. The Content-Security-Policy lets the page load only those and talk only to the
// monitor; everything it shows it writes as text (no HTML from data), so a URL or an error message from a crawled
// site cannot run in it.

export const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

// Its stylesheet and script are relative, as the page's API calls are (media/monitor/api.ts): behind a reverse proxy
// serving the monitor under a path, they are asked for under that path.
export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Crawl Studio monitor</title>
<link rel="stylesheet" href="monitor.css">
</head>
<body>
<header>
  <h1>Crawl Studio monitor</h1>
  <span id="updated" aria-live="polite"></span>
  <form id="token-form" autocomplete="off">
    <label>Token for actions <input id="token" type="password" spellcheck="false"></label>
    <button type="submit">Use</button>
    <span id="token-state"></span>
  </form>
</header>
<p id="message" role="status"></p>
<main>
  <section><h2>Tasks</h2><div id="tasks"></div></section>
  <section id="task" hidden></section>
  <section><h2>Workers</h2><label><input type="checkbox" id="all-workers"> include workers gone long ago</label><div id="workers"></div></section>
</main>
<script src="monitor.js"></script>
</body>
</html>
`;

export const PAGE_CSS = `
:root { color-scheme: light dark; --line: #8884; --muted: #888; --bad: #c33; --ok: #2a7; --warn: #b60; }
body { font: 14px/1.4 system-ui, sans-serif; margin: 0 1.5rem 2rem; }
header { display: flex; gap: 1.5rem; align-items: baseline; flex-wrap: wrap; border-bottom: 1px solid var(--line); }
h1 { font-size: 1.3rem; } h2 { font-size: 1.1rem; margin: 1.5rem 0 .5rem; } h3 { font-size: 1rem; margin: 1rem 0 .3rem; }
#updated, .muted { color: var(--muted); }
#message { min-height: 1.4em; font-weight: 600; }
#message.error { color: var(--bad); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .2rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.task { cursor: pointer; } tr.task.selected { background: #8882; }
.cards { display: flex; flex-wrap: wrap; gap: .6rem; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: .4rem .8rem; min-width: 7rem; }
.card .v { font-size: 1.3rem; font-variant-numeric: tabular-nums; }
.card .l { color: var(--muted); font-size: .85rem; }
.state-gone, .state-silent { color: var(--bad); font-weight: 600; } .state-live { color: var(--ok); }
td .warning { color: var(--warn); font-weight: normal; font-size: .85rem; max-width: 28rem; }
.url { word-break: break-all; } .msg { color: var(--muted); } code { font-family: ui-monospace, monospace; font-size: .95em; }
svg.chart { width: 100%; max-width: 40rem; height: 6rem; border: 1px solid var(--line); }
svg.chart polyline { fill: none; stroke-width: 1.5; }
.actions { display: flex; gap: .6rem; flex-wrap: wrap; align-items: flex-start; margin: .6rem 0; }
textarea { width: 28rem; max-width: 100%; height: 3.2rem; }
.shots { display: flex; flex-wrap: wrap; gap: .8rem; }
.shots figure { margin: 0; width: 16rem; } .shots img { width: 100%; border: 1px solid var(--line); }
button[data-action="stop"] { color: var(--bad); }
#notify.bad { color: var(--bad); font-weight: 600; }
`;
