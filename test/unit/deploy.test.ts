import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { containerRecipe } from '../support/containerRecipe';

// Issue 36, item 4: the Kubernetes example cannot be applied here (no cluster), so what can be checked is: every
// manifest parses, and the pieces agree with each other and with the product — the worker's args are the
// Containerfile's CMD, its probes hit the --health port's paths, the drain fits the grace period, KEDA scales the
// Deployment that exists on metrics the monitor exports, the monitor answers to the Host the scrapes send.

const dir = 'deploy/kubernetes';
type Obj = { kind: string; metadata: { name: string }; spec: Record<string, any> };
const docs = (file: string): Obj[] =>
  parseAllDocuments(readFileSync(`${dir}/${file}`, 'utf8')).map((d) => {
    assert.deepEqual(d.errors, [], `${file}: ${d.errors.join('; ')}`);
    return d.toJS() as Obj;
  });

describe('deploy/: the container recipe and the Kubernetes example agree', () => {
  const kustomization = docs('kustomization.yaml')[0] as unknown as { resources: string[] };
  const all = kustomization.resources.flatMap(docs);
  const worker = all.find((o) => o.kind === 'Deployment' && o.metadata.name === 'crawl-studio-worker')!;
  const monitor = all.find((o) => o.kind === 'Deployment' && o.metadata.name === 'crawl-studio-monitor')!;
  const scaled = all.find((o) => o.kind === 'ScaledObject')!;
  const recipe = containerRecipe(readFileSync('deploy/worker/Containerfile', 'utf8'));

  it('lists every manifest, each parsing, with the objects the example needs', () => {
    assert.ok(worker && monitor && scaled, all.map((o) => `${o.kind}/${o.metadata.name}`).join(', '));
    assert.ok(all.some((o) => o.kind === 'Service' && o.metadata.name === 'crawl-studio-monitor'));
  });

  it('runs the worker as the Containerfile does, probed on its --health port, draining within the grace period', () => {
    const c = worker.spec.template.spec.containers[0];
    assert.deepEqual(c.args, recipe.cmd, "the Deployment passes the Containerfile's CMD");
    const flag = (name: string) => c.args[c.args.indexOf(name) + 1];
    const health = c.ports.find((p: { name: string }) => p.name === 'health');
    assert.equal(String(health.containerPort), flag('--health'));
    assert.equal(c.livenessProbe.httpGet.path, '/healthz');
    assert.equal(c.readinessProbe.httpGet.path, '/readyz');
    assert.equal(
      String(c.ports.find((p: { name: string }) => p.name === 'metrics').containerPort),
      flag('--metrics-port'),
    );
    assert.ok(
      Number(flag('--drain-timeout').replace(/s$/, '')) < worker.spec.template.spec.terminationGracePeriodSeconds,
      'the drain ends before SIGKILL',
    );
    // The Redis target, with its password, by environment from a Secret: never an argument.
    assert.ok(!c.args.some((a: string) => /redis/.test(a)));
    assert.deepEqual(c.env.find((e: { name: string }) => e.name === 'CRAWL_STUDIO_REDIS').valueFrom.secretKeyRef, {
      name: 'crawl-studio-redis',
      key: 'url',
    });
  });

  it('scales the worker Deployment on metrics the monitor exports', () => {
    assert.equal(scaled.spec.scaleTargetRef.name, worker.metadata.name);
    const metricsDoc = readFileSync('docs/metrics.md', 'utf8');
    for (const t of scaled.spec.triggers as { type: string; metadata: { query: string } }[]) {
      assert.equal(t.type, 'prometheus');
      const names = t.metadata.query.match(/crawl_studio_[a-z_]+/g) ?? [];
      assert.ok(names.length > 0, t.metadata.query);
      for (const n of names)
        assert.ok(metricsDoc.includes(`| \`${n}\` | gauge |`), `${n} is a gauge the monitor exports (docs/metrics.md)`);
    }
  });

  it('binds the monitor where scrapes and probes reach it, with a token from a Secret', () => {
    const c = monitor.spec.template.spec.containers[0];
    assert.equal(c.args[c.args.indexOf('--bind') + 1], '$(POD_IP)', 'the pod address is a Host it answers to');
    assert.equal(c.env.find((e: { name: string }) => e.name === 'POD_IP').valueFrom.fieldRef.fieldPath, 'status.podIP');
    assert.ok(
      c.env.some((e: { name: string }) => e.name === 'CRAWL_STUDIO_MONITOR_TOKEN'),
      'bound beyond loopback, the monitor needs a given token',
    );
    assert.equal(
      monitor.spec.template.metadata.annotations['prometheus.io/port'],
      c.args[c.args.indexOf('--port') + 1],
    );
  });
});
