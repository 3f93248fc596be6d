// Fitting the model's inputs from runtime traces: routing/commit matrices and latency profiles.
import { describe, expect, it } from 'vitest';
import { estimateRouting, fitLatencyProfile, ThroughputError, type RoutingStep } from '../../../runtime/control/throughput/index.ts';

/** Seeded LCG, so the sampled traces are the same every run. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296;
}

describe('estimateRouting', () => {
  it('recovers R2R P and C from sampled per-request step sequences (next inferred from order)', () => {
    const p = 0.35;
    const rand = lcg(42);
    const steps: RoutingStep[] = [];
    for (let r = 0; r < 200; r++) {
      let model = 'small';
      for (let k = 0; k < 100; k++) {
        // The last step finishes the request, so it commits (nothing is handed off).
        const last = k === 99;
        const switching = model === 'small' ? !last && rand() < p : true;
        const next = switching ? (model === 'small' ? 'large' : 'small') : model;
        // R2R: a small step that hands off has its token discarded; a large step commits its token.
        steps.push({ requestId: `r${r}`, model, committed: model === 'small' && switching ? 0 : 1 });
        model = next;
      }
    }
    const est = estimateRouting(steps);
    expect(est.models).toEqual(['small', 'large']);
    expect(est.P[0][1]).toBeGreaterThan(p - 0.02);
    expect(est.P[0][1]).toBeLessThan(p + 0.02);
    // Each request's last step closes the loop back to its entry model ("small").
    expect(est.P[1][0]).toBe(1);
    expect(est.C).toEqual([
      [1, 0],
      [1, 0],
    ]);
    expect(est.steps.reduce((a, b) => a + b, 0)).toBe(steps.length);
  });

  it('honours explicit next, model order, closeLoop and rejects unknown models', () => {
    const steps: RoutingStep[] = [
      { requestId: 'a', model: 'b', next: 'a', committed: 2 },
      { requestId: 'a', model: 'a', next: 'a', committed: 1 },
      { requestId: 'a', model: 'a', next: null, committed: 1 },
    ];
    const est = estimateRouting(steps, { models: ['a', 'b'], closeLoop: false });
    expect(est.counts).toEqual([
      [1, 0],
      [1, 0],
    ]);
    expect(est.C[1][0]).toBe(2);
    const closed = estimateRouting(steps, { models: ['a', 'b'] });
    expect(closed.counts[0][1]).toBe(1); // finish → back to the request's entry model "b"
    expect(() => estimateRouting(steps, { models: ['a'] })).toThrow(ThroughputError);
    expect(() => estimateRouting([])).toThrow(ThroughputError);
  });
});

describe('fitLatencyProfile', () => {
  it('averages per batch size, interpolates between sizes and extrapolates with the last slope', () => {
    const prof = fitLatencyProfile(
      [
        { model: 0, batch: 1, ms: 5 },
        { model: 0, batch: 1, ms: 7 },
        { model: 0, batch: 4, ms: 9 },
        { model: 1, batch: 2, ms: 30 },
      ],
      { maxBatch: [6, 3] },
    );
    expect(prof.at(0, 1)).toBe(6);
    expect(prof.at(0, 2)).toBeCloseTo(7, 12);
    expect(prof.at(0, 4)).toBe(9);
    expect(prof.at(0, 6)).toBeCloseTo(11, 12);
    expect(prof.table[0]).toHaveLength(6);
    // One measured size: constant.
    expect(prof.table[1]).toEqual([30, 30, 30]);
  });

  it('is monotone even when noisy means dip (pool-adjacent-violators)', () => {
    const prof = fitLatencyProfile([
      { model: 0, batch: 1, ms: 10 },
      { model: 0, batch: 2, ms: 14 },
      { model: 0, batch: 3, ms: 12 },
      { model: 0, batch: 4, ms: 16 },
    ]);
    const t = prof.table[0];
    for (let b = 1; b < t.length; b++) expect(t[b]).toBeGreaterThanOrEqual(t[b - 1]);
    expect(t[1]).toBe(13);
    expect(t[2]).toBe(13);
  });

  it('rejects bad samples and missing models', () => {
    expect(() => fitLatencyProfile([{ model: 0, batch: 0, ms: 3 }])).toThrow(ThroughputError);
    expect(() => fitLatencyProfile([{ model: 1, batch: 1, ms: 3 }])).toThrow(ThroughputError);
  });
});
