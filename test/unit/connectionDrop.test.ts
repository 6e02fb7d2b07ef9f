import assert from 'node:assert/strict';
import { isConnectionDrop } from '../../src/redis/connect';

// What a crawl's driver waits out rather than ending the run on (issue 35), and a worker rather than failing a page
// on: the replies and errors ioredis gives while Redis, or a Redis Cluster, restarts or fails over. A wrong command, a script's error or Redis full are not among them.
describe('isConnectionDrop', () => {
  it('takes the errors of a connection that dropped or a cluster not serving yet', () => {
    for (const m of [
      'Connection is closed.',
      // A MULTI or pipeline in flight when the client reconnects (a Sentinel failover), which ioredis does not resend.
      'Command aborted due to connection close',
      'Failed to refresh slots cache.',
      'None of startup nodes is available',
      "Cluster isn't ready and enableOfflineQueue options is false",
      'Too many Cluster redirections. Last error: Error: Connection is closed.',
      'CLUSTERDOWN The cluster is down',
      'LOADING Redis is loading the dataset in memory',
      'TRYAGAIN Multiple keys request during rehashing of slot',
      'connect ECONNREFUSED 127.0.0.1:6390',
      'read ECONNRESET',
    ])
      assert.equal(isConnectionDrop(new Error(m)), true, m);
  });

  it('leaves every other error to end what it ends', () => {
    for (const m of [
      'ERR unknown command',
      'WRONGTYPE Operation against a key holding the wrong kind of value',
      "OOM command not allowed when used memory > 'maxmemory'.",
      'EXECABORT Transaction discarded because of previous errors.',
      'ERR Error running script: user_script:12: attempt to compare nil with number',
      'the run of task t is gone from Redis',
    ])
      assert.equal(isConnectionDrop(new Error(m)), false, m);
  });
});
