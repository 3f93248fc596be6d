// Quality vs speed: every algorithm and baseline on one split's problems, with accuracy, token shares and throughput.
import type { Algorithm } from '../../shared/algorithm.ts';
import { builtinFactory } from '../registry/builtins.ts';
import { createRealClock } from '../clock/clock.ts';
import { Cluster } from '../entry/cluster.ts';
import type { RequestResult } from '../entry/requestState.ts';
import type { ModelRunner } from '../runner/modelRunner.ts';
import type { TextTokenizer } from '../runner/tokenizer.ts';
import type { TraceDir } from '../trace/traceDir.ts';
import type { Grade } from './graders.ts';
import { chatOf, type TaskProblem } from './loadTask.ts';
import type { ComparedPoint } from './pairedStats.ts';

export type EntryKind = 'token-level' | 'single' | 'query-level';

export interface EvalEntrySpec {
  name: string;
  kind: EntryKind;
  factory: string;
  params?: Record<string, unknown>;
}

export interface EvalEntry {
  name: string;
  kind: EntryKind;
  params: Record<string, unknown>;
  accuracy: number;
  throughput_tok_s: number;
  mean_latency_ms: number;
  token_share: Record<string, number>;
  handoffs_per_request: number;
  problems: number;
  /** Per problem, in the set's order: whether the task's grader took the answer as right (for paired tests). */
  correct: boolean[];
}

/** The single models alone: every comparison's members. */
export function singlesPlan(models: readonly string[]): EvalEntrySpec[] {
  return ['small', 'medium', 'large'].filter((m) => models.includes(m)).map((m) => ({ name: `${m}-only`, kind: 'single', factory: `single-${m}` }));
}

/**
 * The default plan: single models, the query-level router, R-Stitch's sweep, the router-head
 * algorithms at the points calibrated on validation (`headPoints`, from calibration.json; without it
 * a fixed grid of the on-policy heads), and ME.
 */
export function defaultPlan(models: readonly string[], headPoints?: readonly EvalEntrySpec[]): EvalEntrySpec[] {
  const has = (m: string) => models.includes(m);
  const plan = singlesPlan(models);
  for (const t of [0.3, 0.5, 0.7]) plan.push({ name: `query-router τ=${t}`, kind: 'query-level', factory: 'query-router', params: { threshold: t } });
  // R-Stitch's fixed sweep reaches past 3x large-only's throughput (τ 0.2, 0.3): the fallback target's region.
  const fixed = [0.01, 0.03, 0.1, 0.2, 0.3].map(rStitchEntry);
  const calibrated = headPoints ?? HEAD_ALGORITHMS.flatMap((alg) => [alg.grid[3], alg.grid[5]].map((v) => headEntry(alg, alg.head, v)));
  plan.push(...fixed.filter((f) => !calibrated.some((c) => c.name === f.name)), ...calibrated);
  if (has('medium')) plan.push({ name: 'me 0.5/0.3/0.2', kind: 'token-level', factory: 'me' });
  return plan;
}

/** The router-head algorithms, their head on small, threshold parameter and the validation grid it is calibrated on. */
export const HEAD_ALGORITHMS = [
  { factory: 'citer', head: 'citer', param: 'tau', symbol: 'τ', grid: [0.8, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 0.998, 0.999] },
  { factory: 'r2r', head: 'r2r', param: 'tau', symbol: 'τ', grid: [0.002, 0.005, 0.01, 0.02, 0.04, 0.08, 0.12, 0.2, 0.3] },
  { factory: 'co-llm', head: 'colm', param: 'eta', symbol: 'η', grid: [0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2] },
] as const;

/** R-Stitch's entropy thresholds swept on validation (it reads no head, so it is calibrated beside the head algorithms). */
export const R_STITCH_GRID = [0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3] as const;

export function rStitchEntry(tau: number): EvalEntrySpec {
  return { name: `r-stitch τ=${tau}`, kind: 'token-level', factory: 'r-stitch', params: { tau } };
}

/** One entry of a router-head algorithm reading `head` (the on-policy head, or its teacher-forced `-tf` twin). */
export function headEntry(alg: (typeof HEAD_ALGORITHMS)[number], head: string, value: number): EvalEntrySpec {
  const tag = head === alg.head ? alg.factory : `${alg.factory} (${head})`;
  return { name: `${tag} ${alg.symbol}=${value}`, kind: 'token-level', factory: alg.factory, params: { [alg.param]: value, head } };
}

/** The calibration plan (validation only): small and large alone, and every head-reading algorithm over its grid, on-policy and teacher-forced heads. */
export function headsPlan(models: readonly string[]): EvalEntrySpec[] {
  const plan = singlesPlan(models).filter((e) => e.name !== 'medium-only');
  for (const tau of R_STITCH_GRID) plan.push(rStitchEntry(tau));
  for (const alg of HEAD_ALGORITHMS) for (const head of [alg.head, `${alg.head}-tf`]) for (const v of alg.grid) plan.push(headEntry(alg, head, v));
  return plan;
}

export interface EvalOptions {
  runners: Map<string, ModelRunner>;
  tokenizer: TextTokenizer;
  problems: readonly TaskProblem[];
  /** The task's grader: whether an answer's text is right against its reference. */
  grade: Grade;
  plan: EvalEntrySpec[];
  concurrency: number;
  maxTokens: number;
  onProgress?: (entry: string, done: number, total: number) => void;
  /** Writes one JSON-lines trace per entry here (the timeline opens them). */
  traceDir?: TraceDir;
}

/** Runs each entry as a closed loop at fixed concurrency on a fresh cluster (TokenRouter mode, thresholds 1). */
export async function evaluate(opts: EvalOptions): Promise<EvalEntry[]> {
  const out: EvalEntry[] = [];
  const prompts = opts.problems.map((p) => opts.tokenizer.encodeChat(chatOf(p)));
  for (const spec of opts.plan) {
    const factory = builtinFactory(spec.factory);
    if (!factory) throw new Error(`eval: unknown algorithm ${spec.factory}`);
    const probe = factory(spec.params);
    if (!probe.models.every((m) => opts.runners.has(m))) continue;
    const trace = opts.traceDir?.open(spec.name);
    const cluster = new Cluster({
      clock: createRealClock(),
      mode: 'async-delayed',
      retainState: true,
      maxConcurrency: opts.concurrency,
      trace,
      models: probe.models.map((name) => ({ name, runner: opts.runners.get(name)!, maxBatch: 32 })),
    });
    const results: RequestResult[] = new Array(prompts.length);
    let next = 0;
    let done = 0;
    const t0 = performance.now();
    await new Promise<void>((resolve) => {
      const send = () => {
        const i = next++;
        // The query-level router decides from the prompt text, so it is built per request.
        const alg: Algorithm<unknown> = (
          spec.kind === 'query-level' ? factory({ ...spec.params, prompt: opts.problems[i].question }) : probe
        ) as Algorithm<unknown>;
        cluster.submit({
          prompt: prompts[i],
          maxTokens: opts.maxTokens,
          algorithm: alg,
          sampling: { temperature: 0, seed: i },
          onEnd: (r) => {
            results[i] = r;
            done++;
            opts.onProgress?.(spec.name, done, prompts.length);
            if (next < prompts.length) send();
            else if (done === prompts.length) resolve();
          },
        });
      };
      for (let c = 0; c < Math.min(opts.concurrency, prompts.length); c++) send();
    });
    const wallMs = performance.now() - t0;
    await trace?.close();
    const perProblem: boolean[] = [];
    let committed = 0;
    let handoffs = 0;
    let latency = 0;
    const byModel: Record<string, number> = {};
    const failed = results.filter((r) => r.status !== 'done');
    // A failing algorithm is a bug to report, not a row of wrong answers.
    if (failed.length)
      throw new Error(
        `eval: ${spec.name}: ${failed.length} of ${results.length} requests ${failed[0].status}: ${failed[0].error?.message ?? 'no error message'}`,
      );
    results.forEach((r, i) => {
      const text = r.tokens.length ? opts.tokenizer.decode(r.tokens) : '';
      const right = r.status === 'done' && opts.grade(text, opts.problems[i].answer);
      perProblem.push(right);
      committed += r.tokens.length;
      handoffs += r.handoffs;
      latency += r.endedAt - r.submittedAt;
      for (const [m, n] of Object.entries(r.tokensByModel)) byModel[m] = (byModel[m] ?? 0) + n;
    });
    const share = Object.fromEntries(Object.entries(byModel).map(([m, n]) => [m, committed ? n / committed : 0]));
    out.push({
      name: spec.name,
      kind: spec.kind,
      params: spec.params ?? {},
      accuracy: perProblem.filter(Boolean).length / prompts.length,
      throughput_tok_s: (committed / wallMs) * 1000,
      mean_latency_ms: latency / prompts.length,
      token_share: share,
      handoffs_per_request: handoffs / prompts.length,
      problems: prompts.length,
      correct: perProblem,
    });
  }
  return out;
}

/** Marker shape per paired-test outcome against large-only: up / down triangles for significantly above / below. */
const MARKS: Record<ComparedPoint['versus_reference'], { label: string; path: (x: number, y: number) => string }> = {
  above: { label: 'significantly above large-only (p < 0.05)', path: (x, y) => `M${x} ${y - 7}L${x + 7} ${y + 5}L${x - 7} ${y + 5}Z` },
  same: { label: 'not different from large-only', path: (x, y) => `M${x - 6} ${y}a6 6 0 1 0 12 0a6 6 0 1 0 -12 0Z` },
  below: { label: 'significantly below large-only (p < 0.05)', path: (x, y) => `M${x} ${y + 7}L${x + 7} ${y - 5}L${x - 7} ${y - 5}Z` },
  reference: { label: 'large-only (the reference)', path: (x, y) => `M${x} ${y - 8}L${x + 8} ${y}L${x} ${y + 8}L${x - 8} ${y}Z` },
  untested: { label: 'untested (no large-only in the run)', path: (x, y) => `M${x - 5} ${y - 5}h10v10h-10Z` },
};

/**
 * Accuracy against throughput, one marker per point, coloured by kind (the paper's Figure 6 idea) and
 * shaped by its paired test against large-only, so "above" means measured, not eyeballed.
 */
export function frontierSvg(points: readonly ComparedPoint[]): string {
  const W = 1000;
  const H = 560;
  const m = { l: 70, r: 340, t: 30, b: 55 };
  const xs = points.map((e) => e.tok_s);
  const xMax = Math.max(...xs) * 1.08;
  const yMin = Math.max(0, Math.min(...points.map((e) => e.accuracy)) - 0.05);
  const x = (v: number) => m.l + (v / xMax) * (W - m.l - m.r);
  const y = (v: number) => H - m.b - ((v - yMin) / (1 - yMin)) * (H - m.t - m.b);
  const colour: Record<string, string> = { single: '#555', 'query-level': '#d9822b', 'token-level': '#2b6cd9' };
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="11">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
  ];
  for (let i = 0; i <= 5; i++) {
    const v = yMin + ((1 - yMin) * i) / 5;
    parts.push(
      `<line x1="${m.l}" x2="${W - m.r}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/><text x="${m.l - 6}" y="${y(v) + 4}" text-anchor="end">${(v * 100).toFixed(0)}%</text>`,
    );
    const xv = (xMax * i) / 5;
    parts.push(`<text x="${x(xv)}" y="${H - m.b + 16}" text-anchor="middle">${xv.toFixed(0)}</text>`);
  }
  parts.push(
    `<line x1="${m.l}" x2="${m.l}" y1="${m.t}" y2="${H - m.b}" stroke="#333"/><line x1="${m.l}" x2="${W - m.r}" y1="${H - m.b}" y2="${H - m.b}" stroke="#333"/>`,
  );
  parts.push(`<text x="${(m.l + W - m.r) / 2}" y="${H - 15}" text-anchor="middle">committed throughput (tokens/s, concurrency 8)</text>`);
  parts.push(`<text transform="translate(18 ${(m.t + H - m.b) / 2}) rotate(-90)" text-anchor="middle">exact-match accuracy</text>`);
  // Dense clusters make inline labels collide: number the markers and list them beside the plot.
  points.forEach((e, k) => {
    const cx = x(e.tok_s);
    const cy = y(e.accuracy);
    const c = colour[e.kind] ?? '#000';
    parts.push(
      `<path d="${MARKS[e.versus_reference].path(cx, cy)}" fill="${c}" fill-opacity="0.85"><title>${esc(e.name)}: ${(e.accuracy * 100).toFixed(1)}%, ${e.tok_s.toFixed(0)} tok/s, ${e.versus_reference}${e.p_value === null ? '' : ` (p = ${e.p_value.toPrecision(2)})`}</title></path>`,
    );
    parts.push(`<text x="${cx + 9}" y="${cy + 4}" font-size="10" fill="${c}">${k + 1}</text>`);
  });
  let ly = m.t;
  for (const [k, c] of Object.entries(colour)) {
    parts.push(`<circle cx="${W - m.r + 16}" cy="${ly}" r="5" fill="${c}"/><text x="${W - m.r + 26}" y="${ly + 4}">${k}</text>`);
    ly += 16;
  }
  const used = new Set(points.map((p) => p.versus_reference));
  for (const [k, mark] of Object.entries(MARKS)) {
    if (!used.has(k as ComparedPoint['versus_reference'])) continue;
    parts.push(`<path d="${mark.path(W - m.r + 16, ly)}" fill="#888"/><text x="${W - m.r + 26}" y="${ly + 4}">${esc(mark.label)}</text>`);
    ly += 17;
  }
  ly += 8;
  points.forEach((e, k) => {
    parts.push(
      `<text x="${W - m.r + 10}" y="${ly}" fill="${colour[e.kind] ?? '#000'}">${k + 1}. ${esc(e.name)} — ${(e.accuracy * 100).toFixed(1)}%, ${e.tok_s.toFixed(0)}</text>`,
    );
    ly += 15;
  });
  parts.push('</svg>');
  return parts.join('\n');
}
