// Debug-mode checks of what no type can rule out: a request decoding on exactly one engine, no running request lost, no KV cache leaked.
import type { KvCache } from './localRequest.ts';
import type { Engine } from './engine.ts';
import type { RequestState } from '../entry/requestState.ts';

export class InvariantError extends Error {
  override readonly name = 'InvariantError';
}

/**
 * Walks every engine's requests and every request at the entry: O(requests × models), so only with `checkInvariants: true`. `lanes`:
 * the engines in this process; `engines`: how many in all (those elsewhere check themselves, and ownership across them is not visible here).
 */
export function checkInvariants(lanes: readonly Engine[], engines: number, active: Iterable<RequestState>): void {
  const owners = new Map<string, string[]>();
  for (const lane of lanes) checkEngine(lane, owners);
  if (lanes.length !== engines) return;
  for (const req of active) {
    const on = owners.get(req.id) ?? [];
    if (on.length !== 1) throw new InvariantError(`${req.id} is active on ${on.length} engines (${on.join(', ')}); it must be on exactly one`);
    owners.delete(req.id);
  }
  const [stray] = owners;
  if (stray) throw new InvariantError(`${stray[0]} is decoding on ${stray[1].join(', ')} but the entry has no such request`);
}

/** One engine alone: every local's state is one it may hold, and every cache its KV pool counts has one holder. */
export function checkEngine(lane: Engine, owners = new Map<string, string[]>()): void {
  const held = new Set<KvCache>();
  const ready = new Set(lane.queues.readyView(Infinity).locals);
  for (const [id, local] of lane.locals) {
    const s = local.status;
    // The ready queue admits only running requests (EngineQueues.enqueue), so what is left to lose is a running one neither queued nor stepping.
    if (s === 'running' || s === 'queued') {
      owners.set(id, [...(owners.get(id) ?? []), lane.name]);
      if (s === 'running' && !ready.has(local) && !lane.isStepping(local))
        throw new InvariantError(`${id}: running on ${lane.name} but neither ready nor in a batch`);
      if (s === 'queued' && local.cache) throw new InvariantError(`${id}: queued on ${lane.name} yet holding a cache`);
    } else if (s !== 'pending-return') throw new InvariantError(`${id}: local state ${s} on ${lane.name} is still held there`);
    if (local.cache) held.add(local.cache);
  }
  // Caches of requests that ended during a running batch are freed when the batch returns.
  if (lane.inFlight) for (const l of lane.inFlight.locals) if (l.ended && l.cache) held.add(l.cache);
  let open = 0;
  for (const c of lane.pool.open) {
    open++;
    if (!held.has(c)) throw new InvariantError(`${lane.name}: KV pool holds cache ${c.id} (${c.fed} tokens) that no request holds`);
  }
  if (open !== held.size) throw new InvariantError(`${lane.name}: requests hold ${held.size} caches, the KV pool counts ${open}`);
  // the prefix cache's entries: caches no request holds, within the pool beside the reservations
  const prefix = lane.queues.prefix;
  if (!prefix) return;
  const ids = new Set([...held].map((c) => c.id));
  for (const e of prefix.entries()) if (ids.has(e.cacheId)) throw new InvariantError(`${lane.name}: prefix entry ${e.cacheId} is also a request's cache`);
  const { reservedTokenCount: reserved, capacityTokens: capacity } = lane.pool;
  const cached = prefix.heldTokens;
  if (cached > 0 && reserved + cached > capacity)
    throw new InvariantError(`${lane.name}: cached prefixes (${cached} tokens) and reservations (${reserved}) exceed the pool (${capacity})`);
}
