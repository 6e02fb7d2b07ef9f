import type { Redis } from 'ioredis';
import { until } from './until';

// Redis's own coordinated failover (FAILOVER, Redis ≥ 6.2), as a managed service's "test failover" does it: writes
// paused on the primary until the replica has them, then the roles swapped. What a test needs around it: the
// replica online as the primary sees it (FAILOVER refuses "target replica is not online" otherwise, which a loaded
// machine met after the replica's own link said up), and the swap awaited.

/** Whether `primary` counts the replica listening on `port` as online (INFO replication's `slaveN:…,state=online`). */
export async function replicaOnline(primary: Redis, port: number): Promise<boolean> {
  return new RegExp(`^slave\\d+:ip=127\\.0\\.0\\.1,port=${port},state=online`, 'm').test(
    await primary.info('replication'),
  );
}

async function role(node: Redis): Promise<string | undefined> {
  return /^role:(\w+)/m.exec(await node.info('replication'))?.[1];
}

/** Fails `primary` over to its replica on `replicaPort` (reached through `replica`), and waits until the roles swapped. */
export async function failOver(primary: Redis, replica: Redis, replicaPort: number): Promise<void> {
  await until('the replica online', () => replicaOnline(primary, replicaPort), 120_000);
  await until(
    'FAILOVER accepted',
    () =>
      primary.call('FAILOVER', 'TO', '127.0.0.1', String(replicaPort), 'TIMEOUT', '60000').then(
        () => true,
        // Between the check and the call the link may drop (a loaded machine): asked again.
        (err: Error) => {
          if (/not online/.test(err.message)) return false;
          throw err;
        },
      ),
    120_000,
  );
  await until('the replica promoted', async () => (await role(replica)) === 'master', 120_000);
  await until('the primary demoted', async () => (await role(primary)) === 'slave', 120_000);
}
