// One request's grammar state on one engine, derived from its committed tokens: synced to them before each draw, it gives that draw's token mask.
import type { Constraint } from '../../shared/protocol/constraint.ts';
import type { CompiledGrammar } from './grammarCache.ts';
import type { XgMatcherHandle, XGrammar } from './xgrammar.ts';

/** How far back a changed sequence is rolled back in place; further, the matcher restarts and replays. */
export const MAX_ROLLBACK_TOKENS = 64;

/** A committed token the grammar does not accept: the runner drew outside the mask, or the sequence came from elsewhere. */
export class GrammarViolation extends Error {
  constructor(
    readonly index: number,
    readonly token: number,
  ) {
    super(`output token ${index} (id ${token}) is not allowed by the request's grammar`);
    this.name = 'GrammarViolation';
  }
}

/** The output index from which a finished answer was masked: at once, or after the first `startAfter` id (undefined: it never began). */
export function maskedFrom(constraint: Constraint, output: readonly number[]): number | undefined {
  const ids = constraint.startAfter;
  if (!ids || ids.length === 0) return 0;
  const at = output.findIndex((t) => ids.includes(t));
  return at < 0 ? undefined : at + 1;
}

/**
 * The matcher follows the sequence it is synced to and remembers what it accepted, so nothing of it
 * travels: an engine that receives a handoff, recomputes after an eviction or holds a replica syncs
 * its own state to the sequence it holds, accepting what is new, rolling back (or replaying) what
 * changed. Before `startAfter` appears in the output the answer is free (no mask).
 */
export class ConstraintState {
  private readonly matcher: XgMatcherHandle;
  /** Tokens the matcher accepted, which are `tokens[start..start + accepted.length)` of the sequence. */
  private readonly accepted: number[] = [];
  /** Where the grammar starts in the sequence; -1 while `startAfter` has not appeared. */
  private start: number;
  /** Output positions scanned for `startAfter` so far. */
  private scanned: number;
  private readonly words: number;
  private readonly vocabSize: number;
  /** Rollbacks and restarts done (for tests and traces). */
  rollbacks = 0;
  replays = 0;

  constructor(
    private readonly xg: XGrammar,
    compiled: CompiledGrammar,
    private readonly promptLength: number,
    private readonly startAfter: Constraint['startAfter'],
  ) {
    const { binding } = xg;
    this.matcher = xg.call(() => new binding.GrammarMatcher(compiled.handle, undefined, false, MAX_ROLLBACK_TOKENS));
    this.vocabSize = compiled.vocab.vocabSize;
    this.words = Math.ceil(this.vocabSize / 32);
    this.start = startAfter && startAfter.length > 0 ? -1 : promptLength;
    this.scanned = promptLength;
  }

  /** The output index from which the grammar covers the answer; -1 while it is free. */
  get maskedFrom(): number {
    return this.start < 0 ? -1 : this.start - this.promptLength;
  }

  /** Tokens of the sequence the matcher has accepted (the grammar's part). */
  get acceptedCount(): number {
    return this.accepted.length;
  }

  /** The grammar is complete: only a stop token may follow. */
  get terminated(): boolean {
    return this.matcher.IsTerminated();
  }

  /** Brings the matcher to `tokens` (prompt included). Throws GrammarViolation at a token the grammar refuses. */
  sync(tokens: readonly number[]): void {
    if (this.start < 0 || tokens.length < this.start || (this.start > this.promptLength && !this.startAfter!.includes(tokens[this.start - 1])))
      this.findStart(tokens);
    if (this.start < 0) return;
    const acc = this.accepted;
    const from = this.start;
    let same = 0;
    const n = Math.min(acc.length, tokens.length - from);
    while (same < n && acc[same] === tokens[from + same]) same++;
    if (same < acc.length) this.rewind(acc.length - same);
    for (let i = from + acc.length; i < tokens.length; i++) {
      const t = tokens[i];
      if (!this.matcher.AcceptToken(t, false)) throw new GrammarViolation(i - this.promptLength, t);
      acc.push(t);
    }
  }

  /** The mask for the token after `tokens` (synced first); undefined while the answer is free. */
  mask(tokens: readonly number[]): Int32Array | undefined {
    this.sync(tokens);
    if (this.start < 0) return undefined;
    const { binding } = this.xg;
    const v = this.matcher.GetNextTokenBitmask(this.vocabSize);
    try {
      return binding.vecIntToView(v).slice(0, this.words);
    } finally {
      v.delete();
    }
  }

  dispose(): void {
    this.matcher.delete();
  }

  /** Forgets the last `k` accepted tokens: a rollback when the matcher keeps that much history, else a restart that replays the rest. */
  private rewind(k: number): void {
    const acc = this.accepted;
    const kept = this.matcher.GetMaxRollbackTokens();
    // -1: the matcher keeps its whole history (newer xgrammar); our window still bounds it
    if (k <= MAX_ROLLBACK_TOKENS && (kept < 0 || k <= kept)) {
      this.matcher.Rollback(k);
      acc.length -= k;
      this.rollbacks++;
      return;
    }
    const keep = acc.slice(0, acc.length - k);
    this.matcher.Reset();
    acc.length = 0;
    this.replays++;
    for (const t of keep) {
      // these were accepted before, in this order: the grammar accepts them again
      this.matcher.AcceptToken(t, false);
      acc.push(t);
    }
  }

  /** Finds where the grammar starts: just after the first `startAfter` id in the output; a sequence that shrank before it starts over. */
  private findStart(tokens: readonly number[]): void {
    if (this.start >= 0) {
      // the sequence no longer reaches the start: the grammar's part is gone
      this.matcher.Reset();
      this.accepted.length = 0;
      this.replays++;
      this.start = -1;
      this.scanned = this.promptLength;
    }
    const ids = this.startAfter ?? [];
    if (ids.length === 0) {
      this.start = this.promptLength;
      return;
    }
    if (tokens.length < this.scanned) this.scanned = this.promptLength;
    for (let i = this.scanned; i < tokens.length; i++) {
      if (ids.includes(tokens[i])) {
        this.start = i + 1;
        return;
      }
    }
    this.scanned = tokens.length;
  }
}
