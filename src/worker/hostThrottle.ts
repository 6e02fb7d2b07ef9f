import { afterAnswer, hostCap, type HostAnswer, type HostCap } from '../core/autoscale/hostThrottle';
import type { InSlot, PoliteWait } from './fetchSlots';

// The per-host back-off of an autoscaled worker (core/autoscale/hostThrottle.ts decides): a job takes a turn of its
// host before the host gate, and its request's answer moves the host's cap. A job waiting for a turn waits as it
// does for politeness (not counted as work by fetchSlots.ts), in short steps.

/** How often a job waiting for its host's turn looks again. */
const TURN_POLL_MS = 25;

interface HostEntry {
  state: HostCap;
  inFlight: number;
}

export class HostThrottles {
  private readonly hosts = new Map<string, HostEntry>();

  /**
   * @param max the task's per-host concurrency: no host is ever given more.
   * @param log where a host's cap moving is told.
   */
  constructor(
    private readonly max: number,
    private readonly log: (level: 'info' | 'warn' | 'error', message: string) => void,
  ) {}

  /** A turn of `host`: resolves with its release once fewer than the host's cap of this worker's requests are out. */
  async turn(host: string, politeWait: PoliteWait): Promise<() => void> {
    for (;;) {
      const e = this.entry(host);
      if (e.inFlight < e.state.cap) {
        e.inFlight++;
        let released = false;
        return () => {
          if (released) return;
          released = true;
          e.inFlight--;
          // A host back at its full cap with nothing out needs no entry (a broad crawl has many hosts).
          if (e.inFlight === 0 && e.state.cap >= this.max && this.hosts.get(host) === e) this.hosts.delete(host);
        };
      }
      await politeWait(TURN_POLL_MS);
    }
  }

  /** `inSlot` for a job of `host`: its request's answer feeds the host's cap. */
  measured(host: string, inSlot: InSlot): InSlot {
    return async (fetch) => {
      const start = performance.now();
      // Taken with the turn (turn() counted it): what the host had from this worker when this request went.
      const inFlight = this.entry(host).inFlight;
      try {
        const v = await inSlot(fetch);
        this.answer(host, { ms: performance.now() - start, throttled: false, inFlight });
        return v;
      } catch (err) {
        const status = (err as { status?: unknown } | null)?.status;
        if (typeof status === 'number')
          this.answer(host, { ms: performance.now() - start, throttled: status === 429 || status === 503, inFlight });
        throw err;
      }
    };
  }

  /** A host's cap now (the task's per-host concurrency when it never pushed back). */
  capOf(host: string): number {
    return this.hosts.get(host)?.state.cap ?? this.max;
  }

  private answer(host: string, a: Omit<HostAnswer, 'at'>): void {
    const e = this.entry(host);
    const { state, reason } = afterAnswer(this.max, e.state, { at: Date.now(), ...a });
    e.state = state;
    if (reason) this.log('info', `host ${host} ${reason}`);
  }

  private entry(host: string): HostEntry {
    let e = this.hosts.get(host);
    if (!e) {
      e = { state: hostCap(this.max), inFlight: 0 };
      this.hosts.set(host, e);
    }
    return e;
  }
}
