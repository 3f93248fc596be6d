// The entry's books on its caches: which replica holds each one and how many tokens, where a new or lost cache goes next.
import type { StepRow } from '../runner/modelRunner.ts';
import { RemoteRunnerError } from './remoteRunnerError.ts';
import type { Replica, ReplicaSet } from './replicaSet.ts';

/** Placement of a cache whose replica died: re-prefill from the mirror on the next step (recompute policy). */
export const LOST = '';

/**
 * A cache stays on the replica that created it (its KV lives there), so the books must follow
 * every step to count each replica's load for the next placement. Under the recompute policy they
 * also keep every token each cache was fed, so that a cache lost with its replica can be rebuilt.
 */
export class CachePlacement {
  /** cacheId → replica subject, or LOST. */
  private readonly placement = new Map<number, string>();
  /** cacheId → KV tokens it holds (its position after the last step), for load accounting. */
  private readonly cacheTokens = new Map<number, number>();
  /** cacheId → every token fed so far, kept only under the recompute policy. */
  private readonly mirror: Map<number, number[]> | null;
  /** Caches this entry gave up on a replica declared lost, released if that replica turns out alive. */
  private readonly abandonedOn = new Map<string, number[]>();
  /** Caches that died with their replica under the "fail" policy: a later step reports their rows lost. */
  private readonly gone = new Map<number, RemoteRunnerError>();

  constructor(
    private readonly replicas: ReplicaSet,
    private readonly model: string,
    private readonly recompute: boolean,
  ) {
    this.mirror = recompute ? new Map() : null;
  }

  /** Replica subject holding a cache (undefined: none; LOST: awaiting recompute). */
  of(cacheId: number): string | undefined {
    return this.placement.get(cacheId);
  }

  /** Set when the cache died with its replica under the "fail" policy. */
  goneError(cacheId: number): RemoteRunnerError | undefined {
    return this.gone.get(cacheId);
  }

  /** The live, not draining replica with the lowest share of its KV capacity in use, counting what this step adds. */
  leastLoaded(adding: ReadonlyMap<Replica, number>, tokens: number): Replica | null {
    let best: Replica | null = null;
    let bestLoad = Infinity;
    for (const r of this.replicas.values()) {
      if (r.draining) continue;
      const load = (r.othersTokens + r.ourTokens + (adding.get(r) ?? 0) + tokens) / Math.max(1, r.kvCapacityTokens);
      if (load < bestLoad) {
        best = r;
        bestLoad = load;
      }
    }
    return best;
  }

  noPlaceError(): RemoteRunnerError {
    const draining = [...this.replicas.values()].filter((r) => r.draining).length;
    return new RemoteRunnerError('no_replicas', `no replica of model ${this.model} takes new requests (${this.replicas.size} live, ${draining} of them draining)`);
  }

  /** The row that rebuilds a lost cache: everything it was fed, then this step's tokens, from position 0. */
  recomputeRow(row: StepRow): StepRow {
    const fed = this.mirror?.get(row.cacheId);
    // the mirror may run past the row's start: lookahead tokens the engine did not use
    if (!fed || fed.length < row.position) {
      throw new RemoteRunnerError('protocol', `model ${this.model}: cannot recompute cache ${row.cacheId} of ${row.requestId} (kept ${fed?.length ?? 0} tokens, row starts at ${row.position})`);
    }
    return { ...row, tokens: fed.slice(0, row.position).concat(row.tokens), position: 0 };
  }

  /** A row's step succeeded on `subject`: the cache lives there now, holding its position + tokens. */
  fed(row: StepRow, subject: string): void {
    this.hold(row, subject);
    if (this.mirror) {
      // what the cache holds now: up to the row's start (a row may start inside the last
      // step's lookahead), then its tokens; streamed passes add theirs (fedAhead)
      const m = row.position === 0 ? [] : this.mirror.get(row.cacheId) ?? [];
      m.length = Math.min(m.length, row.position);
      for (const t of row.tokens) m.push(t);
      this.mirror.set(row.cacheId, m);
    }
  }

  private hold(row: StepRow, subject: string): void {
    const r = this.replicas.get(subject);
    if (row.position === 0) {
      this.forget(row.cacheId);
      this.gone.delete(row.cacheId);
      if (r) {
        this.placement.set(row.cacheId, subject);
        r.cacheIds.add(row.cacheId);
      } else {
        // its replica was declared lost while the step ran: the new cache went with it
        this.abandonedOn.set(subject, [...(this.abandonedOn.get(subject) ?? []), row.cacheId]);
        if (this.recompute) this.placement.set(row.cacheId, LOST);
        else this.gone.set(row.cacheId, new RemoteRunnerError('replica_lost', `replica ${subject} of model ${this.model} was lost while it created cache ${row.cacheId}`));
        return;
      }
    } else if (this.placement.get(row.cacheId) !== subject) {
      return; // moved to recompute or lost while the step ran
    }
    const held = row.position + row.tokens.length;
    r!.ourTokens += held - (this.cacheTokens.get(row.cacheId) ?? 0);
    this.cacheTokens.set(row.cacheId, held);
  }

  /** A streamed lookahead pass fed `token` to a cache. */
  fedAhead(cacheId: number, token: number): void {
    const where = this.placement.get(cacheId);
    const r = where ? this.replicas.get(where) : undefined;
    if (r?.cacheIds.has(cacheId)) {
      r.ourTokens++;
      this.cacheTokens.set(cacheId, (this.cacheTokens.get(cacheId) ?? 0) + 1);
    }
    this.mirror?.get(cacheId)?.push(token);
  }

  /** Drops a cache from the books; answers the replica subject that still holds it, if any. */
  release(cacheId: number): string | undefined {
    const where = this.placement.get(cacheId);
    this.forget(cacheId);
    this.gone.delete(cacheId);
    this.mirror?.delete(cacheId);
    return where === LOST ? undefined : where;
  }

  /** Drops a cache from this entry's books (not from the replica). */
  private forget(cacheId: number): void {
    const where = this.placement.get(cacheId);
    if (where) {
      const r = this.replicas.get(where);
      if (r?.cacheIds.delete(cacheId)) r.ourTokens -= this.cacheTokens.get(cacheId) ?? 0;
    }
    this.placement.delete(cacheId);
    this.cacheTokens.delete(cacheId);
  }

  /** The caches held on a replica declared lost: released there if it turns out alive after all. */
  abandon(subject: string, cacheIds: number[]): void {
    this.abandonedOn.set(subject, cacheIds);
  }

  /** The caches abandoned on a replica that is back: they are the caller's to release there. */
  takeAbandoned(subject: string): number[] {
    const ids = this.abandonedOn.get(subject) ?? [];
    this.abandonedOn.delete(subject);
    return ids;
  }

  /**
   * The caches of a lost replica are marked for recompute, or (fail policy) gone with `err`.
   * Answers those of them that no step in flight holds: nobody else will report them lost.
   */
  dropLost(cacheIds: readonly number[], err: RemoteRunnerError, inFlight: ReadonlySet<number>): number[] {
    const idle: number[] = [];
    for (const id of cacheIds) {
      this.forget(id);
      if (this.recompute) this.placement.set(id, LOST);
      else {
        this.gone.set(id, err);
        if (!inFlight.has(id)) idle.push(id);
      }
    }
    return idle;
  }
}
