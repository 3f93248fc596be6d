// A token-level ensemble that mixes the models' distributions (ME-mix), decoded by a reference loop over the runners.
import fs from 'node:fs';
import { z } from 'zod';
import type { StepRow, StepWants } from '../../shared/protocol/runnerProtocol.ts';
import { TokenRouterError } from '../errors.ts';
import { comparePaired, type PairedComparison } from './pairedStats.ts';
import { GREEDY, type ModelRunner } from '../runner/modelRunner.ts';
import type { TextTokenizer } from '../runner/tokenizer.ts';
import type { Grade } from './graders.ts';
import { chatOf, type TaskProblem } from './loadTask.ts';

/**
 * Why a reference loop and not a routing algorithm: mixing needs every model's distribution at the
 * same position, and the winner may be a token only the first model sampled; the routing contract
 * can commit only the current model's own token and cannot send a request back to regenerate a
 * position it has already fed. So ME-mix is measured here for accuracy; its cost is the share of
 * positions where the serving runtime would have to consult the other models (consult_share).
 */
export interface MixSpec {
  name: string;
  /** Weight per model name; models with weight 0 are not run. */
  weights: Readonly<Record<string, number>>;
  /** 'linear': Σ w p (the default); 'log': Σ w log p, a product of experts that lets a confident minority outvote. */
  rule?: 'linear' | 'log';
}

export interface MixResult {
  name: string;
  weights: Readonly<Record<string, number>>;
  rule: 'linear' | 'log';
  accuracy: number;
  /** Per problem, in the set's order: whether the final answer was right. */
  correct: boolean[];
  /** Positions where the anchor's top-2 margin was below (others' weight) / (its weight): the only ones where mixing can change its token. */
  consult_share: number;
  /** Positions where the mixture's token differs from the anchor's own greedy token. */
  changed_share: number;
  positions: number;
  seconds: number;
}

const mix = (s: number, m: number, l: number, rule: 'linear' | 'log' = 'linear'): MixSpec => ({
  name: `me-mix${rule === 'log' ? ' log' : ''} ${s ? `${s}/${m}/${l}` : `m+l ${m}/${l}`}`,
  weights: s ? { small: s, medium: m, large: l } : { medium: m, large: l },
  rule,
});

/** The weight grid run on the validation split: medium + large, and all three, under both rules. */
export const MIX_GRID: readonly MixSpec[] = [
  ...[0.1, 0.2, 0.3, 0.4, 0.5].map((m) => mix(0, m, Number((1 - m).toFixed(2)))),
  ...[0.2, 0.3, 0.5].map((m) => mix(0, m, Number((1 - m).toFixed(2)), 'log')),
  ...(
    [
      [0.05, 0.15, 0.8],
      [0.1, 0.2, 0.7],
      [0.1, 0.3, 0.6],
      [0.2, 0.2, 0.6],
      [0.15, 0.35, 0.5],
    ] as const
  ).map(([s, m, l]) => mix(s, m, l)),
  mix(0.1, 0.2, 0.7, 'log'),
  mix(0.2, 0.3, 0.5, 'log'),
];

/**
 * Greedy decoding of the weighted mixture Σ w_m p_m over the whole vocabulary: every model feeds every
 * committed token, so each keeps its own cache; problems run in batches of `batch` rows.
 */
export async function mixEnsemble(
  spec: MixSpec,
  opts: {
    runners: Map<string, ModelRunner>;
    tokenizer: TextTokenizer;
    problems: readonly TaskProblem[];
    grade: Grade;
    maxTokens: number;
    batch?: number;
    onProgress?: (done: number, total: number) => void;
  },
): Promise<MixResult> {
  const names = Object.keys(spec.weights).filter((m) => spec.weights[m] > 0);
  if (names.length === 0) throw new Error(`${spec.name}: every weight is 0`);
  const runners = names.map((m) => {
    const r = opts.runners.get(m);
    if (!r) throw new Error(`${spec.name}: model ${m} is not loaded`);
    return r;
  });
  const w = names.map((m) => spec.weights[m]);
  // The anchor is the heaviest model: the others can outvote its token only where its margin is below their weight over its weight.
  const anchor = w.indexOf(Math.max(...w));
  const log = spec.rule === 'log';
  // Under the log rule no margin bounds what the others can do: every position needs them.
  const bound = log ? Infinity : (w.reduce((a, b) => a + b, 0) - w[anchor]) / w[anchor];
  const V = runners[0].info.vocabSize;
  const eos = runners[0].info.eosTokenIds;
  const wants: StepWants = { topK: V, hidden: false, heads: [] };
  const batch = opts.batch ?? 64;
  const correct: boolean[] = [];
  let consulted = 0;
  let changed = 0;
  let positions = 0;
  const t0 = performance.now();
  for (let start = 0; start < opts.problems.length; start += batch) {
    const chunk = opts.problems.slice(start, start + batch);
    const seqs = chunk.map((p) => opts.tokenizer.encodeChat(chatOf(p)));
    const out: number[][] = chunk.map(() => []);
    const fed = runners.map(() => chunk.map(() => 0));
    const live = new Set(chunk.map((_, i) => i));
    for (let n = 0; n < opts.maxTokens && live.size > 0; n++) {
      const rowsOf = (k: number): StepRow[] =>
        [...live].map((i) => ({
          cacheId: start + i,
          requestId: `mix-${start + i}`,
          tokens: seqs[i].slice(fed[k][i]),
          position: fed[k][i],
          sampling: GREEDY,
          wants,
        }));
      const steps = await Promise.all(runners.map(async (r, k) => (await r.step(rowsOf(k))).rows));
      [...live].forEach((i, j) => {
        const mixed = new Float64Array(V);
        steps.forEach((rows, k) => {
          fed[k][i] = seqs[i].length;
          rows[j].topIds.forEach((id, q) => (mixed[id] += w[k] * (log ? Math.log(Math.max(rows[j].topProbs[q], 1e-30)) : rows[j].topProbs[q])));
        });
        let t = 0;
        for (let v = 1; v < V; v++) if (mixed[v] > mixed[t]) t = v;
        const own = steps[anchor][j];
        positions++;
        if (own.margin < bound) consulted++;
        if (t !== own.token) changed++;
        seqs[i].push(t);
        if (eos.includes(t)) live.delete(i);
        else out[i].push(t);
      });
    }
    for (const r of runners) chunk.forEach((_, i) => r.release(start + i));
    chunk.forEach((p, i) => correct.push(opts.grade(out[i].length ? opts.tokenizer.decode(out[i]) : '', p.answer)));
    opts.onProgress?.(correct.length, opts.problems.length);
  }
  return {
    name: spec.name,
    weights: spec.weights,
    rule: spec.rule ?? 'linear',
    accuracy: correct.filter(Boolean).length / correct.length,
    correct,
    consult_share: consulted / positions,
    changed_share: changed / positions,
    positions,
    seconds: (performance.now() - t0) / 1000,
  };
}

const choiceSchema = z.object({
  split: z.literal('validation'),
  rule: z.string(),
  chosen: z.array(
    z.object({ name: z.string(), weights: z.record(z.string(), z.number().nonnegative()), rule: z.enum(['linear', 'log']), validation_accuracy: z.number() }),
  ),
});
export type EnsembleChoice = z.infer<typeof choiceSchema>;

/** The ME-mix weights chosen on the validation split (`eval --split validation --plan ensemble --choose FILE` writes them), or none. */
export function loadEnsembleChoice(file: string): EnsembleChoice | null {
  if (!fs.existsSync(file)) return null;
  const parsed = choiceSchema.safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
  if (!parsed.success)
    throw new TokenRouterError('invalid_request', `${file}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`, 'ensemble');
  return parsed.data;
}

/** Per family (medium + large; all three), the grid's most accurate setting; a tie goes to the one that consults less. */
export function chooseMixes(results: readonly MixResult[]): EnsembleChoice {
  const family = (r: MixResult) =>
    Object.keys(r.weights)
      .filter((m) => r.weights[m] > 0)
      .join('+');
  const best = new Map<string, MixResult>();
  for (const r of results) {
    const b = best.get(family(r));
    if (!b || r.accuracy > b.accuracy || (r.accuracy === b.accuracy && r.consult_share < b.consult_share)) best.set(family(r), r);
  }
  return {
    split: 'validation',
    rule: 'per family of models, the highest validation accuracy; ties go to the lower consult share',
    chosen: [...best.values()].map((r) => ({ name: r.name, weights: r.weights, rule: r.rule, validation_accuracy: r.accuracy })),
  };
}

export interface MixPoint {
  name: string;
  kind: 'token-level';
  accuracy: number;
  /** Not measured: the reference loop is no serving run (see consult_share for the cost). */
  tok_s: null;
  measured: 'reference loop';
  weights: Readonly<Record<string, number>>;
  rule: 'linear' | 'log';
  consult_share: number;
  changed_share: number;
  p_value: number | null;
  ci_low: number | null;
  ci_high: number | null;
  versus_reference: 'above' | 'same' | 'below' | 'untested';
  /** The same test against the most accurate of its member models in this run. */
  best_member: { name: string; accuracy: number; p_value: number; ci_low: number; ci_high: number; versus: 'above' | 'same' | 'below' } | null;
}

/** A mix's accuracy against large-only and against its best member, paired on the same problems. */
export function mixPoint(mix: MixResult, singles: readonly { name: string; accuracy: number; correct: readonly boolean[] }[], reference: string): MixPoint {
  const versus = (c: PairedComparison) => (c.p_value < 0.05 ? (c.difference > 0 ? 'above' : 'below') : 'same');
  const ref = singles.find((e) => e.name === reference);
  const vsRef = ref ? comparePaired(mix.correct, ref.correct) : null;
  const members = singles.filter((e) => (mix.weights[e.name.replace(/-only$/, '')] ?? 0) > 0);
  const top = members.reduce<(typeof members)[number] | null>((b, e) => (!b || e.accuracy > b.accuracy ? e : b), null);
  const vsTop = top ? comparePaired(mix.correct, top.correct) : null;
  return {
    name: mix.name,
    kind: 'token-level',
    accuracy: mix.accuracy,
    tok_s: null,
    measured: 'reference loop',
    weights: mix.weights,
    rule: mix.rule,
    consult_share: mix.consult_share,
    changed_share: mix.changed_share,
    p_value: vsRef?.p_value ?? null,
    ci_low: vsRef?.ci_low ?? null,
    ci_high: vsRef?.ci_high ?? null,
    versus_reference: vsRef ? versus(vsRef) : 'untested',
    best_member:
      top && vsTop
        ? { name: top.name, accuracy: top.accuracy, p_value: vsTop.p_value, ci_low: vsTop.ci_low, ci_high: vsTop.ci_high, versus: versus(vsTop) }
        : null,
  };
}
