// Speculative lookahead bookkeeping: which rows of a streaming batch may still use the runner's further passes.
import type { TokenSignals } from '../../shared/algorithm.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { Batch } from './batch.ts';
import type { LocalRequest } from './localRequest.ts';

/** Ready requests that a batch still streaming lookahead will serve: they wait for it, not for a new batch. */
export function awaitingAhead(inFlight: readonly Batch[]): Set<LocalRequest> | null {
  let set: Set<LocalRequest> | null = null;
  for (const b of inFlight) if (b.streaming) for (const i of b.live) if (b.locals[i].inReady) (set ??= new Set()).add(b.locals[i]);
  return set;
}

/**
 * Hands one lookahead step's results to `use`, row by row, for the rows that stayed (each checked
 * after the rows before it were used: using one may end another). A row that left, ended or was
 * cancelled uses no later result of this batch; the runner rolls its cache back when it next steps there.
 */
export function takeAheadPart(batch: Batch, part: readonly (TokenSignals | undefined)[], use: (row: number, signals: TokenSignals) => void): void {
  const { locals, rows } = batch;
  const s = batch.steps++ - 1;
  const next: number[] = [];
  for (const i of batch.live) {
    const local = locals[i];
    const sig = part[i];
    // It must have stayed: ready here, same cache, every earlier result used, and its one unfed
    // token is the one the runner fed.
    if (!sig || !local.inReady || local.ended || local.cacheId !== rows[i].cacheId) continue;
    if (local.fed !== rows[i].position + rows[i].tokens.length + s) continue;
    if (local.tokens.length !== local.fed + 1 || local.tokens[local.fed] !== batch.last[i].token) continue;
    batch.aheadRows++;
    batch.tokens++;
    batch.last[i] = sig;
    use(i, sig);
    next.push(i);
  }
  batch.live = next;
}

/** Asks the runner to stop the lookahead of batches still running it; returns how many were asked. */
export function yieldAhead(inFlight: readonly Batch[], runner: ModelRunner): number {
  let asked = 0;
  for (const b of inFlight) {
    if (b.ahead > 0 && !b.yielded) {
      b.yielded = true;
      asked++;
      runner.yieldAhead?.();
    }
  }
  return asked;
}
