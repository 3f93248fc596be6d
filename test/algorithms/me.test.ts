// ME: the seeded draw picks the next writer with frequencies ≈ λ, drawing the current model stays, every token is kept.
import { describe, expect, it } from 'vitest';
import { me, pickByWeights } from '../../examples/algorithms/me.ts';
import { routeInput, sendRequest } from './routeInput.ts';
import { mulberry32 } from '../../shared/rng.ts';

const rng = mulberry32;

describe('me', () => {
  it('draws each model with frequency ≈ its weight over many draws', () => {
    const alg = me();
    const meta = alg.initMeta();
    const next = rng(1234);
    const n = 40_000;
    const counts = [0, 0, 0];
    for (let i = 0; i < n; i++) {
      const model = 1 + (i % 3);
      const d = alg.route(routeInput(meta, { model, draw: next() }));
      counts[(d === 0 ? model : d) - 1]++;
    }
    const freq = counts.map((c) => c / n);
    // Standard error at n = 40k is ≤ 0.0025; 0.01 is four of them.
    expect(Math.abs(freq[0] - 0.5)).toBeLessThan(0.01);
    expect(Math.abs(freq[1] - 0.3)).toBeLessThan(0.01);
    expect(Math.abs(freq[2] - 0.2)).toBeLessThan(0.01);
  });

  it('maps the draw onto cumulative weights at the exact boundaries', () => {
    const w = [0.5, 0.3, 0.2];
    expect([0, 0.4999, 0.5, 0.7999, 0.8, 0.9999999].map((u) => pickByWeights(w, u))).toEqual([1, 1, 2, 2, 3, 3]);
    expect(pickByWeights([0, 1, 0], 0.99999)).toBe(2);
  });

  it('stays when the draw picks the current model, and hands off otherwise', () => {
    const alg = me();
    const meta = alg.initMeta();
    expect(alg.route(routeInput(meta, { model: 1, draw: 0.1 }))).toBe(0);
    expect(alg.route(routeInput(meta, { model: 1, draw: 0.6 }))).toBe(2);
    expect(alg.route(routeInput(meta, { model: 3, draw: 0.85 }))).toBe(0);
    expect(alg.route(routeInput(meta, { model: 3, draw: 0.2 }))).toBe(1);
  });

  it('keeps every token it hands off', () => {
    const alg = me();
    const out = alg.send!(sendRequest(routeInput(alg.initMeta(), { model: 2, token: 11 }), 3, [8]));
    expect(out.keep).toBe(true);
    expect(out.tokens).toEqual([8, 11]);
  });

  it('rejects weights that cannot be drawn from', () => {
    expect(() => me({ wSmall: 0, wMedium: 0, wLarge: 0 })).toThrow(RangeError);
    expect(() => me({ wSmall: -1 })).toThrow(RangeError);
  });
});
