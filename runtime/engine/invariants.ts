// Debug-mode invariant checker for what is still kept twice: the KV pool beside the caches, each request decoding on exactly one engine, and no running request lost between the ready queue and the batch.
import type { Engine } from './engine.ts';
import type { RequestState } from './requestState.ts';

/** What the checker reads: every engine, and the requests the entry holds. */
export interface CheckedCluster {
  /** The engines in this process, themselves. */
  readonly lanes: readonly Engine[];
  /** Every engine: those elsewhere check themselves (checkEngine), and ownership across them is not visible here. */
  readonly engines: readonly unknown[];
  activeRequests(): Iterable<RequestState>;
}

export class InvariantError extends Error {
  override readonly name = 'InvariantError';
}

/**
 * Walks every engine's requests and every request at the entry. Cost is O(requests × models), so it
 * runs only when the cluster is built with `checkInvariants: true` (tests, the stress suite).
 */
export function checkInvariants(cluster: CheckedCluster, lastLength: Map<string, number>): void {
  const owners = new Map<string, string[]>();
  const lanes = cluster.lanes;
  for (const lane of lanes) checkEngine(lane, owners);
  const whole = lanes.length === cluster.engines.length;
  const seen = new Set<string>();
  for (const req of cluster.activeRequests()) {
    seen.add(req.id);
    const on = owners.get(req.id) ?? [];
    if (whole && on.length !== 1) throw new InvariantError(`${req.id} is active on ${on.length} engines (${on.join(', ')}); it must be on exactly one`);
    const prev = lastLength.get(req.id) ?? 0;
    if (req.output.length < prev) throw new InvariantError(`${req.id}: committed sequence shrank from ${prev} to ${req.output.length}`);
    lastLength.set(req.id, req.output.length);
  }
  if (whole) for (const id of owners.keys()) if (!seen.has(id)) throw new InvariantError(`${id} is decoding on ${owners.get(id)!.join(', ')} but the entry has no such request`);
  for (const id of lastLength.keys()) if (!seen.has(id)) lastLength.delete(id);
}

/** One engine alone: every local's state is one it may hold, and its KV pool counts exactly what its caches hold. */
export function checkEngine(lane: Engine, owners = new Map<string, string[]>()): void {
  let cached = 0;
  let reserved = 0;
  /** Cache ids requests hold: a prefix entry must hold none of them. */
  const ids = new Set<number>();
  for (const [id, local] of lane.locals) {
    const s = local.status;
    if (local.id !== id) throw new InvariantError(`${lane.name}: request ${local.id} filed under ${id}`);
    // The ready queue admits only running requests (LaneQueues.enqueue), so what is left to lose is a running one neither queued nor stepping.
    if (s === 'running' || s === 'queued') {
      owners.set(id, [...(owners.get(id) ?? []), lane.name]);
      if (s === 'running' && !lane.queues.isReady(local) && !lane.isStepping(local)) throw new InvariantError(`${id}: running on ${lane.name} but neither ready nor in a batch`);
      if (s === 'queued' && local.hasCache) throw new InvariantError(`${id}: queued on ${lane.name} yet holding a cache`);
    } else if (s !== 'pending-return') throw new InvariantError(`${id}: local state ${s} on ${lane.name} is still held there`);
    if (local.hasCache) {
      cached += local.fed;
      reserved += local.reserved;
      ids.add(local.cacheId);
    }
  }
  // Caches of requests that ended during a running batch are freed when the batch returns.
  if (lane.inFlight) {
    for (const l of lane.inFlight.locals) {
      if (!l.ended || !l.hasCache) continue;
      cached += l.fed;
      reserved += l.reserved;
      ids.add(l.cacheId);
    }
  }
  cached += checkPrefixes(lane, ids);
  if (lane.pool.cachedTokenCount !== cached) throw new InvariantError(`${lane.name}: KV pool counts ${lane.pool.cachedTokenCount} cached tokens, live caches hold ${cached}`);
  if (lane.pool.reservedTokenCount !== reserved) throw new InvariantError(`${lane.name}: KV pool counts ${lane.pool.reservedTokenCount} reserved tokens, live requests reserve ${reserved}`);
}

/** The prefix cache's entries: caches no request holds, each counted once; returns the tokens they hold. */
function checkPrefixes(lane: Engine, requestCaches: ReadonlySet<number>): number {
  const prefix = lane.queues.prefix;
  if (!prefix) return 0;
  let held = 0;
  let n = 0;
  for (const e of prefix.entries()) {
    if (requestCaches.has(e.cacheId)) throw new InvariantError(`${lane.name}: prefix entry ${e.cacheId} is also a request's cache`);
    if (e.node.entry !== e) throw new InvariantError(`${lane.name}: prefix entry ${e.cacheId} is not on its leaf`);
    held += e.length;
    n++;
  }
  if (n !== prefix.size) throw new InvariantError(`${lane.name}: prefix cache lists ${n} entries, counts ${prefix.size}`);
  if (held !== prefix.heldTokens) throw new InvariantError(`${lane.name}: prefix entries hold ${held} tokens, the prefix cache counts ${prefix.heldTokens}`);
  const { reservedTokenCount: reserved, capacityTokens: capacity } = lane.pool;
  if (held > 0 && reserved + held > capacity) throw new InvariantError(`${lane.name}: cached prefixes (${held} tokens) and reservations (${reserved}) exceed the pool (${capacity})`);
  return held;
}
