// Model shares in the request panel add up to 100 %, as the issue found they did not (101 %).
import { describe, expect, it } from 'vitest';
import { wholePercents } from '../../designer/src/timeline/wholePercents.ts';

describe('wholePercents', () => {
  it('sums to 100 where rounding each share alone gives 101 or 99', () => {
    expect(wholePercents([5, 3])).toEqual([63, 37]); // alone: 63 + 38
    expect(wholePercents([1, 1, 1])).toEqual([34, 33, 33]); // alone: 33 * 3
    expect(wholePercents([10, 54])).toEqual([16, 84]);
    for (const c of [
      [1, 2, 3, 4],
      [7, 7, 7, 7, 7, 7],
      [1, 998, 1],
      [13, 29, 41],
    ])
      expect(wholePercents(c).reduce((a, b) => a + b, 0)).toBe(100);
  });

  it('nothing counted: all zero', () => {
    expect(wholePercents([0, 0])).toEqual([0, 0]);
  });
});
