// Router-head calibration: per head the cheapest grid point keeping 99 % of large-only, the teacher-forced twin also at equal cost.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { calibratedPlan, chooseThresholds, loadCalibration } from '../../runtime/eval/headCalibration.ts';
import { headEntry, HEAD_ALGORITHMS, rStitchEntry, type EvalEntry } from '../../runtime/eval/evaluate.ts';

const citerAlg = HEAD_ALGORITHMS[0];
function entry(name: string, accuracy: number, large: number, params: Record<string, unknown> = {}): EvalEntry {
  return {
    name,
    kind: 'token-level',
    params,
    accuracy,
    throughput_tok_s: 1,
    mean_latency_ms: 1,
    token_share: { small: 1 - large, large },
    handoffs_per_request: 0,
    problems: 100,
    correct: [],
  };
}
const point = (head: string, tau: number, accuracy: number, large: number) => {
  const spec = headEntry(citerAlg, head, tau);
  return entry(spec.name, accuracy, large, spec.params);
};

describe('chooseThresholds', () => {
  const entries = [
    entry('large-only', 0.9, 1),
    // on-policy: 0.95 and 0.97 keep 99 % of 0.9 (0.891); 0.95 writes fewer large tokens
    point('citer', 0.9, 0.85, 0.05),
    point('citer', 0.95, 0.895, 0.08),
    point('citer', 0.97, 0.9, 0.12),
    // teacher-forced: none keeps 99 %, so the most accurate (0.97); 0.95's share is closest to on-policy's 0.08
    point('citer-tf', 0.9, 0.8, 0.04),
    point('citer-tf', 0.95, 0.85, 0.07),
    point('citer-tf', 0.97, 0.88, 0.13),
  ];
  const cal = chooseThresholds(entries, 'validation');

  it('keeps 99 % of large-only at the fewest large tokens, else the most accurate, and matches the teacher-forced head by cost', () => {
    expect(cal.chosen.map((c) => [c.head, c.value, c.why.split(' ')[0]])).toEqual([
      ['citer', 0.95, 'fewest'],
      ['citer-tf', 0.97, 'most'],
      ['citer-tf', 0.95, 'large'],
    ]);
    expect(cal.large_only_accuracy).toBe(0.9);
  });

  it('round-trips through its file into held-out entries reading the chosen heads', () => {
    const f = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cal-')), 'calibration.json');
    fs.writeFileSync(f, JSON.stringify(cal));
    expect(calibratedPlan(loadCalibration(f)!).map((e) => [e.name, e.params])).toEqual([
      ['citer τ=0.95', { tau: 0.95, head: 'citer' }],
      ['citer (citer-tf) τ=0.97', { tau: 0.97, head: 'citer-tf' }],
      ['citer (citer-tf) τ=0.95', { tau: 0.95, head: 'citer-tf' }],
    ]);
    fs.writeFileSync(f, JSON.stringify({ rule: 'x' }));
    expect(() => loadCalibration(f)).toThrow(/not a router-head calibration/);
  });

  it("calibrates R-Stitch by the same rule, and the held-out plan adds each choice's grid neighbours", () => {
    const stitch = (tau: number, accuracy: number, large: number) => entry(rStitchEntry(tau).name, accuracy, large, { tau });
    // 0.05 and 0.1 keep 99 % of 0.9; 0.1 writes fewer large tokens; 0.15 falls below
    const c = chooseThresholds(
      [...entries, stitch(0.03, 0.9, 0.12), stitch(0.05, 0.895, 0.1), stitch(0.1, 0.892, 0.08), stitch(0.15, 0.88, 0.06)],
      'validation',
    );
    expect(c.chosen[0]).toMatchObject({ factory: 'r-stitch', param: 'tau', value: 0.1, large_share: 0.08 });
    expect(c.chosen[0].head).toBeUndefined();
    expect(calibratedPlan(c, true).map((e) => e.name)).toEqual([
      ...[0.07, 0.1, 0.15].map((t) => `r-stitch τ=${t}`),
      ...[0.9, 0.95, 0.97].map((t) => `citer τ=${t}`),
      ...[0.95, 0.97, 0.98, 0.9].map((t) => `citer (citer-tf) τ=${t}`),
    ]);
  });

  it('refuses a run without large-only', () => {
    expect(() => chooseThresholds(entries.slice(1), 'validation')).toThrow(/needs the large-only entry/);
  });
});
