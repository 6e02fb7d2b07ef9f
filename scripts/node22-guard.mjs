// Imported first by the test runners: started with a Node older than 22.13 (`node scripts/test.mjs` on Node 20),
// the script runs itself again on the Node that scripts/node.sh picks, so every stage and every process the
// tests start (mocha, workers, code-server and its extension host) agree on one Node that has node:sqlite.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 13)) {
  const nodeSh = join(dirname(fileURLToPath(import.meta.url)), 'node.sh');
  const r = spawnSync('bash', [nodeSh, ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
