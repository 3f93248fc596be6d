// Paired comparisons of two entries answered on the same problems: McNemar's exact test and a bootstrap interval.
import { mulberry32 } from '../../shared/rng.ts';

/** Two-sided exact McNemar p-value from the discordant counts: b = only A right, c = only B right. */
export function mcnemarExact(b: number, c: number): number {
  const n = b + c;
  if (n === 0) return 1;
  const k = Math.min(b, c);
  // Binomial(n, 1/2) tail in log space, so n in the thousands does not overflow.
  let logCoef = 0; // log C(n, 0)
  let tail = 0;
  for (let i = 0; i <= k; i++) {
    if (i > 0) logCoef += Math.log(n - i + 1) - Math.log(i);
    tail += Math.exp(logCoef - n * Math.LN2);
  }
  return Math.min(1, 2 * tail);
}

export interface PairedComparison {
  /** accuracy(A) − accuracy(B) */
  difference: number;
  p_value: number;
  ci_low: number;
  ci_high: number;
  /** A right where B is wrong, and the reverse. */
  only_a: number;
  only_b: number;
}

/**
 * Compares A with B over the same problems: McNemar's exact test and a paired percentile bootstrap
 * 95 % interval of the accuracy difference (problems resampled together, so the pairing is kept).
 */
export function comparePaired(a: readonly boolean[], b: readonly boolean[], opts: { resamples?: number; seed?: number } = {}): PairedComparison {
  if (a.length !== b.length) throw new Error(`paired comparison needs the same problems: ${a.length} against ${b.length}`);
  const n = a.length;
  if (n === 0) throw new Error('paired comparison needs at least one problem');
  const d = a.map((x, i) => Number(x) - Number(b[i]));
  const onlyA = d.filter((x) => x === 1).length;
  const onlyB = d.filter((x) => x === -1).length;
  const resamples = opts.resamples ?? 10_000;
  const rand = mulberry32(opts.seed ?? 1);
  const diffs = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += d[Math.floor(rand() * n)];
    diffs[r] = s / n;
  }
  diffs.sort();
  const at = (q: number) => diffs[Math.min(resamples - 1, Math.max(0, Math.floor(q * resamples)))];
  return { difference: (onlyA - onlyB) / n, p_value: mcnemarExact(onlyA, onlyB), ci_low: at(0.025), ci_high: at(0.975), only_a: onlyA, only_b: onlyB };
}

export interface ComparedPoint {
  name: string;
  kind: string;
  accuracy: number;
  tok_s: number;
  /** McNemar's exact p against the reference; null for the reference itself. */
  p_value: number | null;
  /** Bootstrap 95 % interval of accuracy(this) − accuracy(reference). */
  ci_low: number | null;
  ci_high: number | null;
  /** 'above' / 'below' when p < 0.05, else 'same'; 'untested' when the run has no reference entry. */
  versus_reference: 'above' | 'same' | 'below' | 'reference' | 'untested';
}

/** Every entry's accuracy compared with the reference entry's on the same problems. */
export function pointsAgainst(
  entries: readonly { name: string; kind: string; accuracy: number; throughput_tok_s: number; correct: readonly boolean[] }[],
  reference: string,
): ComparedPoint[] {
  const ref = entries.find((e) => e.name === reference);
  return entries.map((e) => {
    const base = { name: e.name, kind: e.kind, accuracy: e.accuracy, tok_s: e.throughput_tok_s };
    if (!ref || e === ref) return { ...base, p_value: null, ci_low: null, ci_high: null, versus_reference: ref ? 'reference' : 'untested' };
    const c = comparePaired(e.correct, ref.correct);
    const versus = c.p_value < 0.05 ? (c.difference > 0 ? 'above' : 'below') : 'same';
    return { ...base, p_value: c.p_value, ci_low: c.ci_low, ci_high: c.ci_high, versus_reference: versus };
  });
}

export interface ErrorOverlap {
  reference: string;
  /** Problems the reference gets wrong. */
  reference_wrong: number;
  /** Of those, how many each other entry gets right. */
  right_instead: Record<string, number>;
  /** Of those, how many at least one other entry gets right: what any mix of these entries could win at most. */
  any_right: number;
}

/** Where the reference's errors fall: the ceiling on what combining it with the other entries can gain. */
export function errorOverlap(entries: readonly { name: string; correct: readonly boolean[] }[], reference: string): ErrorOverlap | null {
  const ref = entries.find((e) => e.name === reference);
  if (!ref) return null;
  const wrong = ref.correct.flatMap((c, i) => (c ? [] : [i]));
  const others = entries.filter((e) => e !== ref);
  return {
    reference,
    reference_wrong: wrong.length,
    right_instead: Object.fromEntries(others.map((e) => [e.name, wrong.filter((i) => e.correct[i]).length])),
    any_right: wrong.filter((i) => others.some((e) => e.correct[i])).length,
  };
}
