// R-Stitch: the switch fires exactly where entropy crosses τ, small's token is discarded, large hands back when sure.
import { describe, expect, it } from 'vitest';
import { standardReceive } from '../../shared/algorithm.ts';
import { rStitch } from '../../examples/algorithms/rStitch.ts';
import { routeInput, sendRequest } from './routeInput.ts';

describe('rStitch', () => {
  it('leaves small at the first step whose entropy exceeds τ, not before', () => {
    const alg = rStitch();
    const meta = alg.initMeta();
    const entropies = [0.001, 0.02, 0.03, 0.0301, 0.5];
    const decisions = entropies.map((entropy) => alg.route(routeInput(meta, { model: 1, entropy })));
    // 0.03 is not above τ = 0.03; 0.0301 is.
    expect(decisions).toEqual([0, 0, 0, 2, 2]);
  });

  it('on large stays while unsure and hands back at the first step with H ≤ τ', () => {
    const alg = rStitch({ tau: 0.1 });
    const meta = alg.initMeta();
    const decisions = [0.5, 0.2, 0.1001, 0.1, 0.01].map((entropy) => alg.route(routeInput(meta, { model: 2, entropy })));
    expect(decisions).toEqual([0, 0, 0, 1, 1]);
  });

  it('discards the small model token and keeps the large model token', () => {
    const alg = rStitch();
    const meta = alg.initMeta();
    const fromSmall = alg.send!(sendRequest(routeInput(meta, { model: 1, token: 42, entropy: 0.9 }), 2, [5, 6]));
    expect(fromSmall.keep).toBe(false);
    expect(fromSmall.tokens).toEqual([5, 6]);
    const fromLarge = alg.send!(sendRequest(routeInput(meta, { model: 2, token: 43 }), 1, [9]));
    expect(fromLarge.keep).toBe(true);
    expect(fromLarge.tokens).toEqual([9, 43]);
    expect(standardReceive(fromLarge).meta).toBe(meta);
  });

  it('rejects unknown or mistyped parameters', () => {
    expect(() => rStitch({ tau: Number.NaN })).toThrow(RangeError);
    expect(() => rStitch({ tua: 1 } as never)).toThrow(/unknown parameter/);
  });

  it('knows only its own parameters: inherited names and an own __proto__ key (as JSON.parse makes it) are unknown', () => {
    for (const key of ['constructor', 'toString', 'hasOwnProperty', 'valueOf'] as const)
      expect(() => rStitch({ [key]: 1 } as never)).toThrow(`unknown parameter "${key}"`);
    expect(() => rStitch(JSON.parse('{"__proto__": {"tau": 0.5}}') as never)).toThrow('unknown parameter "__proto__"');
  });
});
