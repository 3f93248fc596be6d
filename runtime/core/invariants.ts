// Debug-mode checks of what no type can rule out: a request decoding on exactly one engine, no running request lost, no KV cache leaked.
import type { KvCache } from './localRequest.ts';
import type { Engine } from './engine.ts';
import type { RequestState } from '../entry/requestState.ts';

export class InvariantError extends Error {
  override readonly name = 'InvariantError';
}

/**
 * Walks every engine's requests and every request at the entry: O(requests × models), so only with `checkInvariants: true`. `inProcess`:
 * the engines in this process; `engines`: how many in all (those elsewhere check themselves, and ownership across them is not visible here).
 */
export function checkInvariants(inProcess: readonly Engine[], engines: number, active: Iterable<RequestState>): void {
  const owners = new Map<string, string[]>();
  for (const engine of inProcess) checkEngine(engine, owners);
  if (inProcess.length !== engines) return;
  for (const req of active) {
    const on = owners.get(req.id) ?? [];
    if (on.length !== 1) throw new InvariantError(`${req.id} is active on ${on.length} engines (${on.join(', ')}); it must be on exactly one`);
    owners.delete(req.id);
  }
  const [stray] = owners;
  if (stray) throw new InvariantError(`${stray[0]} is decoding on ${stray[1].join(', ')} but the entry has no such request`);
}

/** One engine alone: every local's state is one it may hold, and every cache its KV pool counts has one holder. */
export function checkEngine(engine: Engine, owners = new Map<string, string[]>()): void {
  const held = new Set<KvCache>();
  const ready = new Set(engine.queues.readyView(Infinity).locals);
  for (const [id, local] of engine.locals) {
    const s = local.status;
    // The ready queue admits only running requests (EngineQueues.enqueue), so what is left to lose is a running one neither queued nor stepping.
    if (s === 'running' || s === 'queued') {
      owners.set(id, [...(owners.get(id) ?? []), engine.name]);
      if (s === 'running' && !ready.has(local) && !engine.isStepping(local))
        throw new InvariantError(`${id}: running on ${engine.name} but neither ready nor in a batch`);
      if (s === 'queued' && local.cache) throw new InvariantError(`${id}: queued on ${engine.name} yet holding a cache`);
    } else if (s !== 'pending-return') throw new InvariantError(`${id}: local state ${s} on ${engine.name} is still held there`);
    if (local.cache) held.add(local.cache);
  }
  // Caches of requests that ended during a running batch are freed when the batch returns.
  if (engine.inFlight) for (const l of engine.inFlight.locals) if (l.ended && l.cache) held.add(l.cache);
  let open = 0;
  for (const c of engine.pool.open) {
    open++;
    if (!held.has(c)) throw new InvariantError(`${engine.name}: KV pool holds cache ${c.id} (${c.fed} tokens) that no request holds`);
  }
  if (open !== held.size) throw new InvariantError(`${engine.name}: requests hold ${held.size} caches, the KV pool counts ${open}`);
  // the prefix cache's entries: caches no request holds, within the pool beside the reservations
  const prefix = engine.queues.prefix;
  if (!prefix) return;
  const ids = new Set([...held].map((c) => c.id));
  for (const e of prefix.entries()) if (ids.has(e.cacheId)) throw new InvariantError(`${engine.name}: prefix entry ${e.cacheId} is also a request's cache`);
  const { reservedTokenCount: reserved, capacityTokens: capacity } = engine.pool;
  const cached = prefix.heldTokens;
  if (cached > 0 && reserved + cached > capacity)
    throw new InvariantError(`${engine.name}: cached prefixes (${cached} tokens) and reservations (${reserved}) exceed the pool (${capacity})`);
}
