import type { BlockedResource } from '../../core/task/model';

// Which requests of a rendered page are aborted in the browser: the resource types its rule blocks (what extraction
// never needs). Private addresses are refused outside the browser, on every hop, by the egress proxy (egress.ts).

export function blockedType(resourceType: string, block: readonly BlockedResource[]): boolean {
  return (block as readonly string[]).includes(resourceType);
}
