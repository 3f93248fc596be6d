// Recompute after a replica's loss: the requests away at another model when their home died, and the whole sequence their next arrival carries.
import type { EngineEntry, WireArrival } from '../../core/messages.ts';
import { TokenRouterError } from '../../errors.ts';

/**
 * The requests of a remote model whose home replica died while they were away at another model.
 * The entry holds every commit and the prompt: the next arrival of each re-prefills on a live
 * replica from there.
 */
export class Orphans {
  private readonly ids = new Set<string>();

  constructor(
    private readonly model: string,
    /** The entry the model was begun with (it changes at every `begin`). */
    private readonly entry: () => EngineEntry | null,
    private readonly stats: { spared: number; recomputed: number },
  ) {}

  /** Of the requests homed on a lost replica, those away at another model: recompute spares them. */
  awayOf(homes: Iterable<string>): string[] {
    return [...homes].filter((id) => this.isAway(id));
  }

  /** A spared request: its next arrival carries the whole sequence. */
  spare(id: string): void {
    this.ids.add(id);
    this.stats.spared++;
  }

  /** Placed again on a live replica (by a peer's replica): recomputed there. */
  placed(id: string): void {
    if (this.ids.delete(id)) this.stats.recomputed++;
  }

  forget(id: string): void {
    this.ids.delete(id);
  }

  clear(): void {
    this.ids.clear();
  }

  /**
   * Gives an orphan's arrival the whole sequence, so the
   * replica it lands on (holding nothing of it) prefills it all. The entry has every commit and the
   * prompt: what was before the handoff's anchor comes from there, the rest with the handoff.
   */
  rehome(a: WireArrival): WireArrival | Error {
    const id = a.spec.id;
    const { anchor, tokens } = a.handoff;
    if (!this.ids.delete(id) || a.context || anchor === 0) return a;
    const committed = this.entry()?.sequence?.(id) ?? [];
    if (committed.length < anchor) {
      return new TokenRouterError(
        'unavailable',
        `model ${this.model} cannot go on with this request: its replica was lost and this entry has ${committed.length} of the ${anchor} tokens it held`,
        'model',
      );
    }
    this.stats.recomputed++;
    return { ...a, context: [...committed.slice(0, anchor), ...tokens] };
  }

  /** Away at another model, as the entry heard from the `moved` events (read after the report that said so was applied). */
  private isAway(id: string): boolean {
    const at = this.entry()?.whereabouts?.(id);
    return at !== undefined && at.model !== this.model;
  }
}
