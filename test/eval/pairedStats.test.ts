import { describe, expect, it } from 'vitest';
import { comparePaired, mcnemarExact, pointsAgainst } from '../../runtime/eval/pairedStats.ts';

describe('mcnemarExact', () => {
  it('matches hand-computed binomial tails', () => {
    // b=3, c=12: 2 * P(X <= 3), X ~ Bin(15, 1/2) = 2 * (1 + 15 + 105 + 455) / 32768
    expect(mcnemarExact(3, 12)).toBeCloseTo(0.03515625, 10);
    expect(mcnemarExact(12, 3)).toBeCloseTo(0.03515625, 10);
    // b=0, c=5: 2 / 32
    expect(mcnemarExact(0, 5)).toBeCloseTo(0.0625, 12);
    // b=1, c=9: 2 * (1 + 10) / 1024
    expect(mcnemarExact(1, 9)).toBeCloseTo(22 / 1024, 12);
    expect(mcnemarExact(4, 4)).toBe(1);
    expect(mcnemarExact(0, 0)).toBe(1);
  });

  it('stays finite for thousands of discordant pairs', () => {
    const p = mcnemarExact(900, 1100);
    expect(p).toBeGreaterThan(0);
    expect(p).toBeLessThan(1e-4);
  });
});

describe('comparePaired', () => {
  it('counts discordant problems and gives an interval around the difference', () => {
    // 100 problems: A right on 60, B right on 50; A alone on 15, B alone on 5.
    const a: boolean[] = [];
    const b: boolean[] = [];
    for (let i = 0; i < 45; i++) a.push(true), b.push(true);
    for (let i = 0; i < 15; i++) a.push(true), b.push(false);
    for (let i = 0; i < 5; i++) a.push(false), b.push(true);
    for (let i = 0; i < 35; i++) a.push(false), b.push(false);
    const c = comparePaired(a, b, { resamples: 4000, seed: 3 });
    expect(c.only_a).toBe(15);
    expect(c.only_b).toBe(5);
    expect(c.difference).toBeCloseTo(0.1, 12);
    expect(c.p_value).toBeCloseTo(mcnemarExact(5, 15), 12);
    // Normal approximation of the paired difference: sd = sqrt((0.2 - 0.01) / 100) ≈ 0.0436, so ≈ ±0.085.
    expect(c.ci_low).toBeGreaterThan(0.0);
    expect(c.ci_low).toBeLessThan(0.04);
    expect(c.ci_high).toBeGreaterThan(0.16);
    expect(c.ci_high).toBeLessThan(0.2);
    expect(comparePaired(a, b, { resamples: 4000, seed: 3 })).toEqual(c);
  });

  it('refuses unpaired inputs', () => {
    expect(() => comparePaired([true], [true, false])).toThrow(/same problems/);
    expect(() => comparePaired([], [])).toThrow(/at least one/);
  });
});

describe('pointsAgainst', () => {
  it('marks entries above, level with and below the reference', () => {
    const ref = Array.from({ length: 200 }, (_, i) => i % 2 === 0); // 50 %
    const better = ref.map((x, i) => x || i % 4 === 1); // +25 points, all discordant one way
    const worse = ref.map((x, i) => x && i % 4 !== 0); // −25 points
    const level = ref.map((x, i) => (i < 2 ? !x : x)); // one swap each way
    const entry = (name: string, correct: boolean[]) => ({
      name,
      kind: 'token-level',
      accuracy: correct.filter(Boolean).length / correct.length,
      throughput_tok_s: 1,
      correct,
    });
    const pts = pointsAgainst([entry('large-only', ref), entry('better', better), entry('worse', worse), entry('level', level)], 'large-only');
    expect(pts.map((p) => p.versus_reference)).toEqual(['reference', 'above', 'below', 'same']);
    expect(pts[0].p_value).toBeNull();
    expect(pts[1].ci_low!).toBeGreaterThan(0);
    expect(pts[2].ci_high!).toBeLessThan(0);
    expect(pts[3].p_value).toBe(1);
  });
});

describe('pointsAgainst without the reference', () => {
  it('marks every entry untested rather than level', () => {
    const pts = pointsAgainst([{ name: 'small-only', kind: 'single', accuracy: 1, throughput_tok_s: 1, correct: [true] }], 'large-only');
    expect(pts[0].versus_reference).toBe('untested');
    expect(pts[0].p_value).toBeNull();
  });
});
