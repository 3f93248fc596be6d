// CITER, R2R and Co-LLM: a head crossing its threshold sends small's token to large (discarded); large hands back after one kept token.
import { describe, expect, it } from 'vitest';
import type { Algorithm } from '../../shared/algorithm.ts';
import { citer } from '../../examples/algorithms/citer.ts';
import { coLlm } from '../../examples/algorithms/coLlm.ts';
import { r2r } from '../../examples/algorithms/r2r.ts';
import { wantsFor } from '../../shared/algorithm.ts';
import { routeInput, sendRequest } from './routeInput.ts';

interface Case {
  name: string;
  make: () => Algorithm<Record<string, never>>;
  head: string;
  /** Head values in order, and the decision each must produce on small. */
  values: number[];
  expected: number[];
}

const cases: Case[] = [
  // CITER switches when confidence drops below 0.9.
  { name: 'citer', make: () => citer({ tau: 0.9 }), head: 'citer', values: [0.99, 0.95, 0.9, 0.8999, 0.1], expected: [0, 0, 0, 2, 2] },
  // R2R switches when divergence probability reaches 0.5 (≥).
  { name: 'r2r', make: () => r2r({ tau: 0.5 }), head: 'r2r', values: [0.1, 0.4999, 0.5, 0.9], expected: [0, 0, 2, 2] },
  // Co-LLM defers when σ(h·g) exceeds 0.15 (strictly).
  { name: 'co-llm', make: () => coLlm({ eta: 0.15 }), head: 'colm', values: [0.01, 0.15, 0.1501, 0.7], expected: [0, 0, 2, 2] },
  // The teacher-forced heads kept for comparison are read by name, with the same rule.
  { name: 'citer on citer-tf', make: () => citer({ tau: 0.9, head: 'citer-tf' }), head: 'citer-tf', values: [0.95, 0.8999], expected: [0, 2] },
  { name: 'r2r on r2r-tf', make: () => r2r({ tau: 0.5, head: 'r2r-tf' }), head: 'r2r-tf', values: [0.4999, 0.5], expected: [0, 2] },
  { name: 'co-llm on colm-tf', make: () => coLlm({ eta: 0.15, head: 'colm-tf' }), head: 'colm-tf', values: [0.15, 0.1501], expected: [0, 2] },
];

describe.each(cases)('$name', ({ make, head, values, expected }) => {
  it('switches exactly where the head crosses the threshold', () => {
    const alg = make();
    const meta = alg.initMeta();
    expect(values.map((v) => alg.route(routeInput(meta, { model: 1, heads: { [head]: v } })))).toEqual(expected);
  });

  it('asks the runner for its head on the small model only', () => {
    const alg = make() as Algorithm<unknown>;
    expect(wantsFor(alg, 1).heads).toEqual([head]);
    expect(wantsFor(alg, 2).heads).toEqual([]);
  });

  it('hands back after exactly one large token, keeping it', () => {
    const alg = make();
    const meta = alg.initMeta();
    const first = routeInput(meta, { model: 2, stepsHere: 1, entropy: 0.9, heads: {} });
    expect(alg.route(first)).toBe(1);
    const back = alg.send!(sendRequest(first, 1, []));
    expect(back.keep).toBe(true);
    expect(back.tokens).toEqual([first.token]);
  });

  it('discards the small token it rejects', () => {
    const alg = make();
    const meta = alg.initMeta();
    const out = alg.send!(sendRequest(routeInput(meta, { model: 1, token: 99 }), 2, [1, 2, 3]));
    expect(out.keep).toBe(false);
    expect(out.tokens).toEqual([1, 2, 3]);
    expect(out.to).toBe(2);
  });
});
