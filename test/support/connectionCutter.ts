import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

// A TCP proxy in front of a real redis-server that cuts a client's connection in the middle of a pipeline: of a
// write that carries several commands (a MULTI … EXEC, an ioredis pipeline or auto-pipeline), it forwards the first
// command only, waits for that command's reply to reach the client, then closes both sides. Redis ran the first
// command and nothing after it; the client holds a pipeline answered in part, which ioredis rejects with "Command
// aborted due to connection close" instead of sending it again (it resends single commands and pipelines not yet
// answered at all). That is what a Sentinel failover does to the clients moving to the new master, here on purpose
// and on one node. Requests and replies are read as RESP2, the protocol ioredis speaks.

export interface ConnectionCutter {
  readonly port: number;
  readonly url: string;
  /** Connections cut so far, each named by the first command of the pipeline it cut short (`MULTI`, `EVALSHA`, …). */
  readonly cuts: readonly string[];
  /** Writes of several commands seen since arm(). */
  readonly pipelines: number;
  /** From now on, cuts the `every`-th pipeline the clients send, until `max` connections have been cut. */
  arm(): void;
  close(): Promise<void>;
}

export interface CutterOptions {
  readonly every: number;
  readonly max: number;
  /**
   * 'first-only' (the default): Redis gets the pipeline's first command only. 'all-sent': Redis gets and runs the
   * whole pipeline, and the client only the first reply: writes it will be told were cut short are in Redis.
   */
  readonly mode?: 'first-only' | 'all-sent';
}

/** The offset just past the RESP value that starts at `at`, or -1 when `buf` does not hold all of it yet. */
export function respEnd(buf: Buffer, at: number): number {
  if (at >= buf.length) return -1;
  const nl = buf.indexOf('\r\n', at);
  if (nl < 0) return -1;
  const after = nl + 2;
  const type = buf[at];
  if (type === 0x24 /* $ */) {
    const n = Number(buf.toString('latin1', at + 1, nl));
    if (n < 0) return after;
    return after + n + 2 <= buf.length ? after + n + 2 : -1;
  }
  if (type === 0x2a /* * */) {
    const n = Number(buf.toString('latin1', at + 1, nl));
    let p = after;
    for (let i = 0; i < n; i++) {
      p = respEnd(buf, p);
      if (p < 0) return -1;
    }
    return p;
  }
  return after; // + - : and inline commands: one line
}

/** The complete RESP values at the start of `buf`: their end offsets. */
function values(buf: Buffer): number[] {
  const ends: number[] = [];
  for (let p = 0; ;) {
    const end = respEnd(buf, p);
    if (end < 0) return ends;
    ends.push(end);
    p = end;
  }
}

/** The command name of a RESP request (`*N\r\n$len\r\nNAME\r\n…`). */
function commandName(request: Buffer): string {
  const m = /^\*\d+\r\n\$\d+\r\n([^\r]*)\r\n/.exec(request.toString('latin1', 0, 64));
  return (m?.[1] ?? '?').toUpperCase();
}

export async function connectionCutter(redisPort: number, opts: CutterOptions): Promise<ConnectionCutter> {
  const cuts: string[] = [];
  const sockets = new Set<Socket>();
  let armed = false;
  let pipelines = 0;

  const server: Server = createServer((client) => {
    const upstream = connect(redisPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    let pending = Buffer.alloc(0); // a request not yet complete
    let replies: Buffer = Buffer.alloc(0); // a reply not yet complete
    let sent = 0;
    let answered = 0;
    // Set when a pipeline is being cut: the connection closes once `sent` requests have their replies.
    let cut: { name: string; timer: NodeJS.Timeout } | null = null;

    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
    };
    // The reply just forwarded is flushed before the client's side closes (end, not destroy).
    const finishCut = () => {
      if (!cut) return;
      clearTimeout(cut.timer);
      cuts.push(cut.name);
      cut = null;
      client.end();
      upstream.destroy();
    };

    client.on('data', (chunk: Buffer) => {
      if (cut) return; // the rest of a pipeline being cut never reaches Redis
      pending = Buffer.concat([pending, chunk]);
      const ends = values(pending);
      if (ends.length === 0) return;
      const complete = ends[ends.length - 1]!;
      if (ends.length >= 2 && armed && ++pipelines % opts.every === 0 && cuts.length < opts.max) {
        const first = pending.subarray(0, ends[0]);
        upstream.write(opts.mode === 'all-sent' ? pending.subarray(0, complete) : first);
        sent += 1;
        // A reply that never comes (a blocking command ahead of it) must not hold the cut for ever.
        cut = { name: commandName(first), timer: setTimeout(finishCut, 3_000) };
        pending = Buffer.alloc(0);
        return;
      }
      upstream.write(pending.subarray(0, complete));
      sent += ends.length;
      pending = Buffer.from(pending.subarray(complete));
    });
    // Replies go through whole, so that a cut lets through exactly the replies of what Redis was sent before it.
    upstream.on('data', (chunk: Buffer) => {
      replies = replies.length > 0 ? Buffer.concat([replies, chunk]) : chunk;
      const ends = values(replies);
      const take = cut ? Math.min(ends.length, sent - answered) : ends.length;
      if (take > 0) {
        client.write(replies.subarray(0, ends[take - 1]));
        answered += take;
        replies = Buffer.from(replies.subarray(ends[take - 1]));
      }
      if (cut && answered >= sent) finishCut();
    });
    for (const s of [client, upstream]) {
      s.on('error', closeBoth);
      s.on('close', () => {
        sockets.delete(s);
        closeBoth();
      });
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    cuts,
    get pipelines() {
      return pipelines;
    },
    arm: () => void (armed = true),
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
