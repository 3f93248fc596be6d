// analyzeMasked (a grammar-masked row in JavaScript) against analyzeRow over the same row with every token the mask refuses pushed to -1e30.
import { describe, expect, it } from 'vitest';
import { allowedIds, analyzeMasked, maskProblem, maskWords } from '../../runtime/runner/maskedRow.ts';
import { analyzeRow, type AnalyzeOptions } from '../../runtime/runner/sampling.ts';
import type { SamplingParams } from '../../runtime/runner/modelRunner.ts';
import { randomMask, seededRandom } from './maskFixtures.ts';

const V = 5000;
const SAMPLINGS: Record<string, SamplingParams> = {
  greedy: { temperature: 0, topP: 1, topK: 0, seed: 3 },
  temperature: { temperature: 0.9, topP: 1, topK: 0, seed: 3 },
  topP: { temperature: 0.7, topP: 0.8, topK: 0, seed: 3 },
  topK: { temperature: 1.2, topP: 1, topK: 5, seed: 3 },
  minP: { temperature: 1, topP: 0.95, topK: 0, minP: 0.05, seed: 3 },
};

function logitsOf(seed: number): Float32Array {
  const rnd = seededRandom(seed);
  return Float32Array.from({ length: V }, () => 4 * rnd() * rnd());
}

/** The reference: the whole-row path over logits where refused tokens sit at -1e30 (their weight underflows to 0). */
function reference(logits: Float32Array, mask: Int32Array, opts: AnalyzeOptions) {
  const ids = new Set(allowedIds(mask, V));
  return analyzeRow(
    logits.map((x, i) => (ids.has(i) ? x : -1e30)),
    opts,
  );
}

describe('analyzeMasked', () => {
  for (const [name, sampling] of Object.entries(SAMPLINGS)) {
    it(`${name}: draws only allowed tokens and matches the reference draw and signals (dense and sparse masks, many seeds)`, () => {
      const distinct = new Set<number>();
      for (let seed = 1; seed <= 60; seed++) {
        const logits = logitsOf(seed);
        const density = seed % 3 === 0 ? 3 / V : seed % 3 === 1 ? 0.5 : 0.02;
        const mask = randomMask(V, density, seed);
        const opts: AnalyzeOptions = { sampling: { ...sampling, seed }, position: seed, model: 'm', topK: 2 };
        const a = analyzeMasked(logits, mask, opts);
        const allowed = allowedIds(mask, V);
        expect(allowed).toContain(a.token);
        const r = reference(logits, mask, opts);
        expect(a.token).toBe(r.token);
        expect(a.entropy).toBeCloseTo(r.entropy, 5);
        expect(a.maxProb).toBeCloseTo(r.maxProb, 5);
        expect(a.tokenProb).toBeCloseTo(r.tokenProb, 5);
        expect(a.topIds).toEqual(r.topIds.slice(0, a.topIds.length));
        for (const t of a.topIds) expect(allowed).toContain(t);
        if (density > 0.01) distinct.add(a.token);
      }
      // sampled draws really vary; greedy ones vary with the logits
      expect(distinct.size).toBeGreaterThan(10);
    });
  }

  it('a one-token mask yields that token with certain signals, under any sampling', () => {
    for (const sampling of Object.values(SAMPLINGS)) {
      const mask = new Int32Array(maskWords(V));
      mask[4321 >>> 5] |= 1 << (4321 & 31);
      const a = analyzeMasked(logitsOf(9), mask, { sampling, position: 1, model: 'm', topK: 3 });
      expect(a).toMatchObject({ token: 4321, entropy: 0, maxProb: 1, margin: 1, tokenProb: 1, topIds: [4321] });
    }
  });

  it('min_tokens bans EOS among the allowed tokens, but not when the grammar allows only EOS', () => {
    const mask = new Int32Array(maskWords(V));
    for (const t of [7, 8]) mask[0] |= 1 << t;
    const logits = new Float32Array(V);
    logits[7] = 10;
    const opts = (sampling: SamplingParams): AnalyzeOptions => ({ sampling, position: 1, model: 'm', topK: 0, eosTokenIds: [7] });
    expect(analyzeMasked(logits, mask, opts({ ...SAMPLINGS.greedy, suppressEos: true })).token).toBe(8);
    expect(analyzeMasked(logits, mask, opts(SAMPLINGS.greedy)).token).toBe(7);
    mask[0] = 1 << 7;
    expect(analyzeMasked(logits, mask, opts({ ...SAMPLINGS.temperature, suppressEos: true })).token).toBe(7);
  });

  it('names what is wrong with a mask: its length, or that it allows nothing (bits past V do not count)', () => {
    expect(maskProblem(new Int32Array(3), V)).toMatch(/3 words, not ceil\(5000 \/ 32\) = 157/);
    const empty = new Int32Array(maskWords(V));
    expect(maskProblem(empty, V)).toMatch(/allows no token/);
    empty[156] = 1 << 9; // token 5001: past V
    expect(maskProblem(empty, V)).toMatch(/allows no token/);
    empty[156] = 1 << 7; // token 4999
    expect(maskProblem(empty, V)).toBeUndefined();
    expect([...allowedIds(empty, V)]).toEqual([4999]);
  });
});
