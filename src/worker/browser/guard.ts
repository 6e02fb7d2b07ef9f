import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isPrivateAddress } from '../../core/url/hosts';
import type { BlockedResource } from '../../core/task/model';

// Which requests a rendered page may make: the resource types its rule blocks are aborted (what extraction never
// needs), and so is any request to a private address, as the fetcher refuses them, unless the task allows it.

export interface RequestGuardOptions {
  readonly block: readonly BlockedResource[];
  /** Hosts (host:port) that may be private: the task's start hosts, or every host when null. */
  readonly privateAllowed: readonly string[] | null;
}

/** Null: the request may go. Else why not. */
export async function refusal(url: string, resourceType: string, opts: RequestGuardOptions, cache: Map<string, Promise<boolean>>): Promise<string | null> {
  if ((opts.block as readonly string[]).includes(resourceType)) return 'blocked';
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'invalid-url';
  }
  if (u.protocol === 'data:' || u.protocol === 'blob:') return null;
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'scheme';
  if (opts.privateAllowed === null || opts.privateAllowed.includes(u.host)) return null;
  const host = u.hostname.replace(/^\[|\]$/g, '');
  let privately = cache.get(host);
  if (!privately) {
    privately = isIP(host)
      ? Promise.resolve(isPrivateAddress(host))
      : lookup(host, { all: true }).then((as) => as.some((a) => isPrivateAddress(a.address)), () => false);
    cache.set(host, privately);
  }
  return (await privately) ? 'private-address' : null;
}
