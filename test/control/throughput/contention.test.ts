// Contention-aware latency: a batch launched beside another model's batch takes the contended time.
import { describe, expect, it } from 'vitest';
import { RoutingEstimator } from '../../../runtime/control/routingEstimator.ts';
import { batchEvent } from '../../core/batchEvent.ts';
import {
  fitContendedLatency,
  markContended,
  markCycles,
  simulateThroughput,
  solveThroughput,
  type LatencySample,
  type ThroughputInput,
} from '../../../runtime/control/throughput/index.ts';

const p = 0.35;
// On a 3 ms lattice the chain is exact, so it must agree with the continuous-time simulation.
const r2r: ThroughputInput = {
  N: 8,
  P: [
    [1 - p, p],
    [1, 0],
  ],
  C: [
    [1, 0],
    [1, 0],
  ],
  latency: (i) => (i === 0 ? 6 : 27),
  contendedLatency: (i) => (i === 0 ? 9 : 30),
  maxBatch: [8, 8],
  thresholds: [1, 3],
};
const three: ThroughputInput = {
  N: 5,
  P: [
    [0.7, 0.2, 0.1],
    [0.6, 0.3, 0.1],
    [1, 0, 0],
  ],
  C: [
    [1, 0, 0],
    [1, 1, 0],
    [1, 1, 1],
  ],
  latency: (i) => [4, 12, 24][i],
  contendedLatency: (i) => [8, 16, 28][i],
  maxBatch: [5, 3, 3],
  thresholds: [1, 2, 1],
};

describe('contended latency in the chain', () => {
  it.each([
    ['R2R N=8', r2r],
    ['three models N=5', three],
  ])('%s: the chain agrees with the Monte Carlo simulation', (_name, input) => {
    const chain = solveThroughput(input).tokensPerSec;
    const runs = [1, 2, 3, 4].map((seed) => simulateThroughput(input, { horizonMs: 400_000, seed }).tokensPerSec);
    const sim = runs.reduce((a, b) => a + b, 0) / runs.length;
    expect(Math.abs(chain - sim) / sim).toBeLessThan(0.01);
  });

  it('sits strictly between all-alone and all-contended latency', () => {
    const { contendedLatency, ...alone } = r2r;
    const mixed = solveThroughput(r2r).tokensPerSec;
    const fast = solveThroughput(alone).tokensPerSec;
    const slow = solveThroughput({ ...alone, latency: contendedLatency! }).tokensPerSec;
    expect(mixed).toBeLessThan(fast * 0.99);
    expect(mixed).toBeGreaterThan(slow * 1.01);
  });

  it('a contended table equal to the alone one changes nothing', () => {
    const { contendedLatency: _c, ...alone } = r2r;
    expect(solveThroughput({ ...alone, contendedLatency: alone.latency }).tokensPerSec).toBe(solveThroughput(alone).tokensPerSec);
  });

  it('one request never overlaps itself, so the contended table is never used', () => {
    const one = { ...r2r, N: 1, thresholds: [1, 1] };
    const slowOverlap = { ...one, contendedLatency: () => 1000 };
    expect(solveThroughput(slowOverlap).tokensPerSec).toBeCloseTo(solveThroughput({ ...one, contendedLatency: undefined }).tokensPerSec, 9);
    // By hand: a cycle is on average 1/p small steps and one large step; a large step commits 1 token,
    // small steps commit with probability 1 − p (a routed step is discarded).
    const cycleMs = 6 / p + 27;
    const tokens = (1 / p) * (1 - p) + 1;
    expect(solveThroughput(one).tokensPerSec).toBeCloseTo((1000 * tokens) / cycleMs, 6);
  });
});

describe('markContended', () => {
  it('tags a batch by whether another model was running at its launch', () => {
    const s = markContended([
      { model: 1, batch: 1, startMs: 40, endMs: 60 }, // small ended at 36 (listed first: output keeps input order)
      { model: 0, batch: 1, startMs: 0, endMs: 5 }, // nothing else running
      { model: 1, batch: 2, startMs: 2, endMs: 30 }, // small running since 0
      { model: 0, batch: 3, startMs: 5, endMs: 11 }, // large running
      { model: 0, batch: 1, startMs: 30, endMs: 36 }, // large ended exactly now
    ]);
    expect(s.map((x) => x.contended)).toEqual([false, false, true, true, false]);
    expect(s.map((x) => x.ms)).toEqual([20, 5, 28, 6, 6]);
    // Two launches at one instant overlap each other, whichever is listed first.
    const tie = markContended([
      { model: 0, batch: 1, startMs: 10, endMs: 16 },
      { model: 1, batch: 1, startMs: 10, endMs: 40 },
    ]);
    expect(tie.map((x) => x.contended)).toEqual([true, true]);
  });
});

describe('markCycles', () => {
  it("times each batch from its launch to its model's next launch, a gap of maxGapMs or more left out, tagged as markContended tags it", () => {
    const batches = [
      { model: 1, batch: 1, startMs: 40, endMs: 60 }, // large's last batch: its wall time
      { model: 0, batch: 1, startMs: 0, endMs: 5 }, // small's next launch at 5: no gap
      { model: 1, batch: 2, startMs: 2, endMs: 30 }, // large's next launch at 40: a 10 ms gap
      { model: 0, batch: 3, startMs: 5, endMs: 11 }, // small's next launch at 30: a 19 ms gap, a pause: its wall time alone
      { model: 0, batch: 1, startMs: 30, endMs: 36 }, // small's last batch
    ];
    const s = markCycles(batches, 15);
    expect(s.map((x) => x.ms)).toEqual([20, 5, 38, 6, 6]);
    expect(s.map((x) => x.contended)).toEqual(markContended(batches).map((x) => x.contended));
    expect(s.map((x) => [x.model, x.batch])).toEqual(batches.map((b) => [b.model, b.batch]));
  });
});

describe('fitContendedLatency', () => {
  it("fits each class from its own samples, fills a class's unseen sizes from the other, and a model seen one way gets one profile", () => {
    const samples: LatencySample[] = [];
    for (let k = 0; k < 10; k++) {
      samples.push({ model: 0, batch: 1, ms: 1 + (k % 2) * 0.2, contended: false });
      samples.push({ model: 0, batch: 1, ms: 2 + (k % 2) * 0.2, contended: true });
      samples.push({ model: 0, batch: 4, ms: 3, contended: true });
      samples.push({ model: 1, batch: 2, ms: 20, contended: true });
    }
    const { alone, contended } = fitContendedLatency(samples, { maxBatch: [4, 2] });
    expect(alone.at(0, 1)).toBeCloseTo(1.1, 9);
    expect(contended.at(0, 1)).toBeCloseTo(2.1, 9);
    expect(contended.at(0, 4)).toBeCloseTo(3, 9);
    // Batch 4 was only seen contended: the lone profile takes those samples, not its flat extrapolation.
    expect(alone.at(0, 4)).toBeCloseTo(3, 9);
    expect(alone.at(1, 2)).toBe(20);
    expect(contended.at(1, 2)).toBe(20);
  });
});

describe('live routing estimate', () => {
  it('fits small steps launched beside a large batch apart from lone ones', () => {
    const est = new RoutingEstimator(['small', 'large'], 10_000, 4);
    // Each 100 ms: two lone 2 ms small steps, then a 30 ms large step beside which two small steps take 3 ms.
    for (let k = 0; k < 30; k++) {
      const t = k * 100;
      est.onEvent(batchEvent('small', 2, t, t + 2));
      est.onEvent(batchEvent('small', 2, t + 10, t + 12));
      est.onEvent(batchEvent('large', 1, t + 20, t + 50));
      est.onEvent(batchEvent('small', 2, t + 25, t + 28));
      est.onEvent(batchEvent('small', 2, t + 30, t + 33));
    }
    const e = est.estimate(3000, 10)!;
    expect(e).not.toBeNull();
    expect(e.latency[0][1]).toBeCloseTo(2, 9);
    expect(e.contendedLatency[0][1]).toBeCloseTo(3, 9);
    // The large model only ever ran beside small steps that launched before it ended: it launched alone.
    expect(e.latency[1][0]).toBeCloseTo(30, 9);
    expect(e.contendedLatency[1][0]).toBeCloseTo(30, 9);
  });
});
