// Counts the commands Redis receives, split into those sent by clients and those run inside Lua scripts, with
// MONITOR (slow: only for the analysis run, never for the timed ones).
import { connect } from 'node:net';

export function startMonitor(port) {
  const s = connect(port, '127.0.0.1');
  const client = new Map();
  const lua = new Map();
  let buf = '';
  s.once('connect', () => s.write('MONITOR\r\n'));
  s.on('data', (b) => {
    buf += b.toString('latin1');
    let i;
    while ((i = buf.indexOf('\r\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const m = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] "([^"]+)"/.exec(line);
      if (!m) continue;
      const cmd = m[2].toLowerCase();
      const target = m[1] === 'lua' ? lua : client;
      target.set(cmd, (target.get(cmd) ?? 0) + 1);
    }
  });
  return {
    stop() {
      s.destroy();
      return { client: Object.fromEntries(client), lua: Object.fromEntries(lua) };
    },
  };
}
