// The latency model against the runtime in virtual time (open loop, paper profile), against the chain (closed loop), and the SLO-aware optimiser's choices.
import { describe, expect, it } from 'vitest';
import { runVirtual } from '../../bench/virtualServing.ts';
import { arrivalTimesMs } from '../../../runtime/loadgen/arrivals.ts';
import { optimiseForSlo, predictLatency, simulateLatency, solveThroughput } from '../../../runtime/control/throughput/index.ts';
import { mulberry32 } from '../../../shared/rng.ts';

const p = 0.35;
const N = 12;
const OUT = 32;
const paper = {
  N,
  P: [
    [1 - p, p],
    [1, 0],
  ],
  C: [
    [1, 0],
    [1, 0],
  ],
  latency: (m: number) => (m === 0 ? 6.0 : 27.9),
  maxBatch: [64, 64],
  outputTokens: OUT,
  promptLength: 128,
  feedMsPerToken: [0.01, 0.1],
};

describe('latency model', () => {
  it.each([
    [3, 1, 20],
    [7, 4, 100],
  ])('predicts p99 TPOT of the runtime within 15 per cent at %d req/s (large threshold %d, deadline %d ms)', (rate, T, wait) => {
    const requests = 300;
    const pred = predictLatency({ ...paper, thresholds: [1, T], maxWaitMs: wait }, { rateRps: rate, requests }, {}, { replications: 4 });
    const run = runVirtual({
      mode: 'async-delayed',
      retainState: true,
      thresholds: { small: 1, large: T },
      concurrency: N,
      requests,
      promptLength: 128,
      maxTokens: OUT,
      maxWaitMs: wait,
      arrivalsMs: arrivalTimesMs(requests, rate, 1, mulberry32(11)),
    });
    expect(Math.abs(pred.p99TpotMs / run.metrics.tpotMs.p99 - 1)).toBeLessThan(0.15);
    expect(Math.abs(pred.meanTpotMs / run.metrics.tpotMs.mean - 1)).toBeLessThan(0.05);
    expect(Math.abs(pred.throughputTokS / run.metrics.outputThroughputTokS - 1)).toBeLessThan(0.05);
  });

  it("in a closed loop agrees with the chain on throughput and with Little's law on mean E2E", () => {
    const closed = { N: 8, P: paper.P, C: paper.C, latency: paper.latency, maxBatch: [8, 8], thresholds: [1, 3] };
    const chain = solveThroughput(closed);
    const sim = simulateLatency({ ...closed, maxWaitMs: 200, outputTokens: 400 }, { requests: 800, seed: 3 });
    expect(Math.abs(sim.throughputTokS / chain.tokensPerSec - 1)).toBeLessThan(0.025);
    // Little: N requests in flight = request rate × mean time in the system.
    expect(Math.abs((sim.requestRps * sim.e2eMs.mean) / 1000 / 8 - 1)).toBeLessThan(0.03);
  });

  it('an open loop past saturation queues at the entry: TTFT grows with the queue, TPOT does not', () => {
    const at = (rate: number) => simulateLatency({ ...paper, thresholds: [1, 1], maxWaitMs: 20 }, { rateRps: rate, requests: 400 });
    const light = at(2);
    const over = at(40);
    expect(light.queueMs.p99).toBeLessThan(50);
    expect(over.queueMs.p99).toBeGreaterThan(5000);
    expect(over.tpotMs.p99).toBeLessThan(2 * light.tpotMs.p99);
  });
});

describe('SLO-aware optimiser', () => {
  const load = (rate: number) => ({ rateRps: rate, requests: 300 });
  const opts = { fixed: { 0: 1 }, maxWaitChoices: [5, 100], replications: 2 };

  it('meets a p99 TPOT bound the throughput-optimal setting misses at light load', () => {
    const slo = { tpotMs: 32 };
    const choice = optimiseForSlo(paper, load(2), slo, opts);
    expect(choice.meetsSlo).toBe(true);
    expect(choice.best.p99TpotMs).toBeLessThanOrEqual(32);
    // A long deadline with a high threshold makes the large model wait for company: TPOT suffers.
    const slow = choice.table.find((c) => c.thresholds[1] === 8 && c.maxWaitMs === 100)!;
    expect(slow.p99TpotMs).toBeGreaterThan(32);
    expect(choice.best.goodputReqS).toBeGreaterThan(slow.goodputReqS);
  });

  it('keeps a large search affordable by trying thresholds on a ladder', () => {
    const wide = { ...paper, N: 16, maxBatch: [16, 16], outputTokens: 8 };
    const choice = optimiseForSlo(wide, { rateRps: 2, requests: 20 }, { tpotMs: 40 }, { replications: 1 });
    const ladder = new Set([1, 2, 3, 4, 6, 8, 12, 16]);
    expect(choice.table.every((c) => c.thresholds.every((t) => ladder.has(t)))).toBe(true);
    expect(choice.table.some((c) => c.thresholds[0] === 12)).toBe(true);
    expect(choice.table.length).toBeLessThan(300);
  });

  it('says when no setting can meet the SLO', () => {
    const choice = optimiseForSlo(paper, load(5), { tpotMs: 5 }, opts);
    expect(choice.meetsSlo).toBe(false);
    expect(choice.table.every((c) => !c.meetsSlo)).toBe(true);
  });
});
