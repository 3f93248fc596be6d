// Times a runner's decode step at each batch size: L_i(b) for the throughput model from a profiling run.
import { percentile } from '../util/stats.ts';
import { GREEDY, type ModelRunner, type StepRow } from './modelRunner.ts';

export interface ProfileOptions {
  /** Tokens each row is prefilled with before the timed decode steps (default 16). */
  promptLength?: number;
  /** Timed decode steps per batch size (default 8); the figure is their median. */
  steps?: number;
  /** Cache ids start here, so the profile never collides with live requests (default 2^30). */
  cacheBase?: number;
  onProgress?: (batch: number, maxBatch: number) => void;
  /** Clock in ms (default performance.now); a test passes a virtual one. */
  now?: () => number;
}

/**
 * For b = 1..maxBatch: prefill b rows (not timed), then time `steps` greedy decode steps of all b
 * rows together; returns ms[b − 1], the median step wall time from the caller's side. Every cache
 * it opens is released, also on failure. The model runs alone here, so these are lone-model times.
 */
export async function profileStepLatency(runner: ModelRunner, maxBatch: number, opts: ProfileOptions = {}): Promise<number[]> {
  const promptLength = opts.promptLength ?? 16;
  const steps = opts.steps ?? 8;
  const base = opts.cacheBase ?? 2 ** 30;
  const now = opts.now ?? (() => performance.now());
  const { vocabSize, eosTokenIds, maxContext } = runner.info;
  if (promptLength + steps + 1 > maxContext) throw new RangeError(`profile needs ${promptLength + steps + 1} tokens of context; the model has ${maxContext}`);
  // Any ids but EOS: the profile times the arithmetic, not the text.
  const token = (k: number) => {
    const id = 1 + (k % (vocabSize - 1));
    return eosTokenIds.includes(id) ? (id % (vocabSize - 1)) + 1 : id;
  };
  const out: number[] = [];
  // The first steps of a fresh runner pay for warm-up (allocations, JIT): run the small sizes once untimed.
  const warm = Math.min(maxBatch, 4);
  for (let b = 1 - warm; b <= maxBatch; b++) {
    const size = b < 1 ? b + warm : b;
    const rows: StepRow[] = Array.from({ length: size }, (_, k) => ({
      cacheId: base + k,
      requestId: `profile-${k}`,
      tokens: Array.from({ length: promptLength }, (_, j) => token(k * 7 + j)),
      position: 0,
      sampling: { ...GREEDY, suppressEos: true },
      wants: { topK: 0, hidden: false, heads: [] },
    }));
    try {
      let res = await runner.step(rows);
      const times: number[] = [];
      for (let s = 0; s < steps; s++) {
        for (const [k, r] of rows.entries()) {
          r.position += r.tokens.length;
          r.tokens = [res.rows[k].token];
        }
        const t0 = now();
        res = await runner.step(rows);
        times.push(now() - t0);
      }
      if (b >= 1) out.push(percentile(times, 50));
    } finally {
      for (const r of rows) runner.release(r.cacheId);
    }
    if (b >= 1) opts.onProgress?.(b, maxBatch);
  }
  return out;
}
