// The prediction check's like-with-like rule: a percentage only for a window that ran as predicted, else the differences named with both figures.
import { describe, expect, it } from 'vitest';
import { likeWithLike, MIN_REQUESTS, modeOf, type WindowShape } from '../../runtime/eval/likeWithLike.ts';

/** A closed loop of 8 over 30 s: 8 in flight 90 % of the busy time, 7 the rest; 32 tokens a request as evaluated; the algorithm alone. */
const steady: WindowShape = {
  requests: 120,
  busyMs: 30_000,
  timeAtActive: new Map([
    [8, 27_000],
    [7, 3_000],
  ]),
  concurrency: 8,
  tokensPerRequest: 32,
  evaluatedTokensPerRequest: 31,
  ownRows: 5000,
  otherRows: 100,
};

describe('likeWithLike', () => {
  it('a steady loop of the algorithm alone, shaped as evaluated, is compared', () => {
    expect(likeWithLike(steady)).toEqual({ comparable: true, reasons: [] });
  });

  it('too few requests', () => {
    const r = likeWithLike({ ...steady, requests: MIN_REQUESTS - 1 });
    expect(r.comparable).toBe(false);
    expect(r.reasons).toEqual([`only ${MIN_REQUESTS - 1} requests ended in the window (at least ${MIN_REQUESTS} needed)`]);
  });

  it('bursty traffic whose mean in flight is 8 but which rarely had 8', () => {
    // half the busy time at 2, half at 14: mean 8, steady never
    const r = likeWithLike({
      ...steady,
      timeAtActive: new Map([
        [2, 15_000],
        [14, 15_000],
        [0, 40_000],
      ]),
    });
    expect(r.comparable).toBe(false);
    expect(r.reasons).toHaveLength(1);
    expect(r.reasons[0]).toMatch(/^concurrency was not steady: 8 ± 2 in flight for 0 % of the busy time/);
    // idle time is not busy time: a loop with pauses between bursts of a steady 8 is still steady
    expect(
      likeWithLike({
        ...steady,
        timeAtActive: new Map([
          [8, 30_000],
          [0, 60_000],
        ]),
      }).comparable,
    ).toBe(true);
  });

  it('at one in flight, ±1 of slack still asks most of the time at 1 or 2', () => {
    const one = {
      ...steady,
      concurrency: 1,
      timeAtActive: new Map([
        [1, 20_000],
        [2, 6_000],
        [3, 4_000],
      ]),
    };
    expect(likeWithLike(one).comparable).toBe(true);
    expect(
      likeWithLike({
        ...one,
        timeAtActive: new Map([
          [1, 5_000],
          [3, 25_000],
        ]),
      }).comparable,
    ).toBe(false);
  });

  it('a different request shape (playground answers of 200 tokens against an evaluation of 31)', () => {
    const r = likeWithLike({ ...steady, tokensPerRequest: 200 });
    expect(r.reasons).toEqual(['requests were shaped differently: 200 tokens per request live, 31 in the evaluation']);
    // within 25 % it is the same shape
    expect(likeWithLike({ ...steady, tokensPerRequest: 38 }).comparable).toBe(true);
  });

  it('other traffic on the same models', () => {
    const r = likeWithLike({ ...steady, ownRows: 3000, otherRows: 1000 });
    expect(r.reasons).toEqual(["other traffic shared the models: 25 % of the batch rows were not this algorithm's"]);
  });

  it('names every difference at once', () => {
    const r = likeWithLike({ ...steady, requests: 2, tokensPerRequest: 100, otherRows: 5000 });
    expect(r.reasons).toHaveLength(3);
  });

  it('modeOf: the most common max_tokens, the smaller of a tie', () => {
    expect(modeOf([64, 256, 64])).toBe(64);
    expect(modeOf([256, 64])).toBe(64);
    expect(modeOf([])).toBeNull();
  });
});
