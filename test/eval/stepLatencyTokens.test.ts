// A step's latency depends on the tokens its rows feed: the fit moves every batch to the evaluated algorithm's tokens a row.
import { describe, expect, it } from 'vitest';
import { extraTokenMs, fitStepLatency, type BatchTiming } from '../../runtime/eval/routingCounts.ts';
import { tokensPerRow } from '../../runtime/eval/predictServing.ts';

/** Back-to-back batches of one model: rows × tokens a row each, costing 2 ms + 0.5 ms a row + 0.25 ms per token beyond one a row. */
function traffic(model: string, from: number, shape: readonly [rows: number, perRow: number][]): BatchTiming[] {
  let t = from;
  return shape.map(([rows, perRow]) => {
    const ms = 2 + 0.5 * rows + 0.25 * rows * (perRow - 1);
    const b = { model, size: rows, start: t, end: t + ms, tokens: rows * perRow };
    t += ms;
    return b;
  });
}

describe('step latency and the tokens a row feeds', () => {
  it('finds the cost of a token beyond one a row, with the rows held', () => {
    const s = [1, 2, 3, 4].flatMap((rows) => [1, 4, 12].map((perRow) => ({ batch: rows, extra: rows * (perRow - 1), ms: 2 + 0.5 * rows + 0.25 * rows * (perRow - 1) })));
    expect(extraTokenMs(s)).toBeCloseTo(0.25, 9);
    // extras that only follow the rows cannot be told apart from them
    expect(extraTokenMs([1, 2, 3].map((rows) => ({ batch: rows, extra: rows, ms: rows })))).toBe(0);
    expect(extraTokenMs([{ batch: 1, ms: 2 }, { batch: 2, ms: 3 }, { batch: 3, ms: 4 }])).toBe(0);
  });

  it('moves live batches of another algorithm (short catch-ups) to the evaluated one\'s (long ones)', () => {
    // the evaluation: 12 tokens a row on the model (one token a visit after eleven elsewhere); the live traffic before it: 2 a row
    const own = traffic('large', 0, [[1, 12], [2, 12], [1, 12], [2, 12]]);
    const live = traffic('large', own[own.length - 1].end, Array.from({ length: 40 }, (_, k) => [1 + (k % 2), k % 5 === 0 ? 12 : 2] as [number, number]));
    const batches = [...own, ...live];
    const tau = tokensPerRow(own);
    expect(tau).toEqual({ large: 12 });
    const moved = fitStepLatency(batches, ['large'], 2, tau).latency[0];
    const asIs = fitStepLatency(batches, ['large'], 2).latency[0];
    // at 12 tokens a row: 2 + 0.5·b + 0.25·11·b
    expect(moved[0]).toBeCloseTo(2 + 0.5 + 0.25 * 11, 6);
    expect(moved[1]).toBeCloseTo(2 + 1 + 0.25 * 22, 6);
    // without the move the live traffic's short catch-ups pull the profile down
    expect(asIs[0]).toBeLessThan(moved[0] - 1);
  });
});
