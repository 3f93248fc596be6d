// Checks a step's rows before the runner feeds them: each fault a StepError naming the request and what is wrong.
import type { ModelInfo, StepRow } from './modelRunner.ts';
import { maskProblem } from './maskedRow.ts';
import { StepError } from './stepError.ts';

/** What of the runner the checks read. */
export interface StepLimits {
  info: ModelInfo;
  /** Tokens the runner holds for a cache (0 when unknown). */
  held(cacheId: number): number;
  /** The router heads the model ships, by name. */
  heads: ReadonlyMap<string, unknown>;
  /** The export has a `hidden_states` output. */
  hasHidden: boolean;
}

/** Each cache once, tokens in the vocabulary, positions where the caches end, within the context, masks and heads the model can serve. */
export function validateStep(rows: readonly StepRow[], { info, held: heldOf, heads, hasHidden }: StepLimits): void {
  const seen = new Set<number>();
  const V = info.vocabSize;
  for (const r of rows) {
    if (seen.has(r.cacheId)) throw new StepError(`${info.name}: cacheId ${r.cacheId} appears twice in one step`);
    seen.add(r.cacheId);
    if (r.tokens.length === 0) throw new StepError(`${info.name}: request ${r.requestId} (cache ${r.cacheId}) feeds no tokens`);
    for (const t of r.tokens) {
      if (!Number.isInteger(t) || t < 0 || t >= V) throw new StepError(`${info.name}: request ${r.requestId}: token ${t} outside vocabulary [0, ${V})`);
    }
    if (r.position !== 0) {
      const held = heldOf(r.cacheId);
      if (r.position !== held) {
        throw new StepError(`${info.name}: request ${r.requestId} (cache ${r.cacheId}) steps at position ${r.position} but its cache holds ${held} tokens`);
      }
    }
    if (r.position + r.tokens.length > info.maxContext) {
      throw new StepError(`${info.name}: request ${r.requestId}: position ${r.position} + ${r.tokens.length} tokens exceeds max context ${info.maxContext}`);
    }
    if (r.mask) {
      const problem = maskProblem(r.mask, V);
      if (problem) throw new StepError(`${info.name}: request ${r.requestId}: ${problem}`);
    }
    for (const h of r.wants.heads) {
      if (!heads.has(h))
        throw new StepError(`${info.name}: router head "${h}" is not shipped with this model (has: ${[...heads.keys()].join(', ') || 'none'})`);
    }
    if ((r.wants.hidden || r.wants.heads.length) && !hasHidden)
      throw new StepError(`${info.name}: hidden state asked for but the ONNX export has no "hidden_states" output`);
  }
}
