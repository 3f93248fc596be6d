// Debug-mode invariant checker: each request in exactly one place, KV accounting exact, commits only grow.
import type { Cluster } from './cluster.ts';
import type { LocalRequest } from './localRequest.ts';

export class InvariantError extends Error {
  override readonly name = 'InvariantError';
}

/**
 * Walks every request in flight and every lane. Cost is O(requests × models), so it runs only when
 * the cluster is built with `checkInvariants: true` (tests, the stress suite).
 */
export function checkInvariants(cluster: Cluster, lastLength: Map<string, number>): void {
  const cached = new Map<number, number>();
  const reserved = new Map<number, number>();
  const seen = new Set<string>();
  for (const req of cluster.activeRequests()) {
    seen.add(req.id);
    let active = 0;
    for (let m = 1; m < req.locals.length; m++) {
      const local: LocalRequest | undefined = req.locals[m];
      if (!local) continue;
      const s = local.status;
      const lane = req.lane(m);
      if (s === 'running' || s === 'queued') {
        active++;
        if (m !== req.owner) throw new InvariantError(`${req.id}: ${s} on ${lane.name} but owned by model ${req.owner}`);
        if (s === 'running' && !(local.inReady || local.inBatch)) throw new InvariantError(`${req.id}: running on ${lane.name} but neither ready nor in a batch`);
        if (s === 'queued' && (local.inReady || local.inBatch || local.hasCache)) throw new InvariantError(`${req.id}: queued on ${lane.name} yet ready, batched or holding a cache`);
      } else if (s === 'pending-return') {
        if (local.inReady || local.inBatch) throw new InvariantError(`${req.id}: pending-return on ${lane.name} yet scheduled there`);
      } else throw new InvariantError(`${req.id}: local state ${s} on ${lane.name} while the request is in flight`);
      if (local.hasCache) {
        cached.set(lane.index, (cached.get(lane.index) ?? 0) + local.fed);
        reserved.set(lane.index, (reserved.get(lane.index) ?? 0) + local.reserved);
      }
    }
    if (active !== 1) throw new InvariantError(`${req.id} is active on ${active} sub-servers; it must be on exactly one`);
    const prev = lastLength.get(req.id) ?? 0;
    if (req.tokens.length < prev) throw new InvariantError(`${req.id}: committed sequence shrank from ${prev} to ${req.tokens.length}`);
    lastLength.set(req.id, req.tokens.length);
  }
  for (const id of lastLength.keys()) if (!seen.has(id)) lastLength.delete(id);
  for (const lane of cluster.lanes) {
    // Caches of requests that ended during a running batch are freed when the batch returns.
    const inFlightEnded = lane.inFlight.flatMap((b) => b.locals.filter((l) => l.req.finished && l.hasCache));
    const c = (cached.get(lane.index) ?? 0) + inFlightEnded.reduce((a, l) => a + l.fed, 0);
    const r = (reserved.get(lane.index) ?? 0) + inFlightEnded.reduce((a, l) => a + l.reserved, 0);
    if (lane.pool.cachedTokenCount !== c) throw new InvariantError(`${lane.name}: KV pool counts ${lane.pool.cachedTokenCount} cached tokens, live caches hold ${c}`);
    if (lane.pool.reservedTokenCount !== r) throw new InvariantError(`${lane.name}: KV pool counts ${lane.pool.reservedTokenCount} reserved tokens, live requests reserve ${r}`);
  }
}
