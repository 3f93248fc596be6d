// Baselines: the single-model router never moves; the query router decides once, at step 0, and never comes back.
import { describe, expect, it } from 'vitest';
import { builtinAlgorithms, builtinFactory } from '../../examples/algorithms/index.ts';
import { digitFeature, queryRouter } from '../../examples/algorithms/queryRouter.ts';
import { singleModel } from '../../examples/algorithms/singleModel.ts';
import { routeInput, sendRequest } from './routeInput.ts';

describe('singleModel', () => {
  it('stays on its model whatever the signals', () => {
    const alg = singleModel('large');
    expect(alg.models).toEqual(['large']);
    const meta = alg.initMeta();
    for (const entropy of [0, 0.5, 1]) expect(alg.route(routeInput(meta, { entropy, draw: entropy }))).toBe(0);
  });
});

describe('queryRouter', () => {
  it('sends a long prompt to large at step 0, discarding the small token', () => {
    const alg = queryRouter();
    const meta = alg.initMeta();
    const first = routeInput(meta, { model: 1, position: 200, generated: 0, entropy: 0.05 });
    expect(alg.route(first)).toBe(2);
    expect(meta.decided).toBe(true);
    expect(alg.send!(sendRequest(first, 2, [])).keep).toBe(false);
    // Large never hands back, whatever it sees.
    for (let i = 0; i < 5; i++) expect(alg.route(routeInput(meta, { model: 2, position: 201 + i, generated: i, entropy: 1 }))).toBe(0);
  });

  it('keeps a short, confident prompt on small and never reconsiders', () => {
    const alg = queryRouter();
    const meta = alg.initMeta();
    expect(alg.route(routeInput(meta, { model: 1, position: 8, generated: 0, entropy: 0.001 }))).toBe(0);
    // Later steps look hard, but the decision was taken at step 0.
    expect(alg.route(routeInput(meta, { model: 1, position: 9, generated: 1, entropy: 1 }))).toBe(0);
  });

  it('uses the prompt text when given one per request', () => {
    expect(digitFeature('what is 12+34*56?')).toBe(1);
    expect(digitFeature('hello')).toBe(0);
    const input = { model: 1, position: 20, generated: 0, entropy: 0.02 };
    const numeric = queryRouter({ prompt: '1234+5678=' });
    expect(numeric.route(routeInput(numeric.initMeta(), input))).toBe(2);
    const plain = queryRouter({ prompt: 'say hello' });
    expect(plain.route(routeInput(plain.initMeta(), input))).toBe(0);
  });
});

describe('builtinAlgorithms', () => {
  it('builds every registered algorithm with its defaults and named as registered', () => {
    for (const [name, make] of builtinAlgorithms) {
      const alg = make();
      expect(alg.name).toBe(name);
      expect(alg.entry).toBeGreaterThanOrEqual(1);
      expect(alg.entry).toBeLessThanOrEqual(alg.models.length);
      expect(structuredClone(alg.initMeta())).toEqual(alg.initMeta());
    }
  });

  it('passes parameters through and rejects wrong ones', () => {
    const alg = builtinFactory('r-stitch')({ tau: 0.5 });
    const meta = alg.initMeta();
    expect(alg.route(routeInput(meta, { entropy: 0.4 }))).toBe(0);
    expect(() => builtinFactory('citer')({ tau: 'high' })).toThrow(TypeError);
  });
});
