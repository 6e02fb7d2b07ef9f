// BullMQ checks each connection it is given and prints "IMPORTANT! Eviction policy is allkeys-lru. It should be
// "noeviction"" with console.warn, whatever maxmemory is, once per connection: twice in a `run` (the driver and
// each worker), in no log format (a JSON log got a bare line). The connection check says it once, in the log's
// form, with what it costs and how to fix it (memory.ts evictionRisk), so BullMQ's line is left out.

const BULLMQ_EVICTION = /^IMPORTANT! Eviction policy is /;

/** Drops BullMQ's eviction-policy line from console.warn; everything else passes through. */
export function quietBullmqEviction(): void {
  const warn = console.warn.bind(console);
  console.warn = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && BULLMQ_EVICTION.test(args[0])) return;
    warn(...args);
  };
}
