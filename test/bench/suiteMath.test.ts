// Pure pieces of the serving suites: ladder ratios, length drop, scaling figures, busy-time breakdown, charts, tables.
import { describe, expect, it } from 'vitest';
import { servingMetrics, type RequestRecord } from '../../runtime/loadgen/requestMetrics.ts';
import { poolRuns, type ServingRun } from '../../runtime/loadgen/benchmarkServing.ts';
import { withRatios } from './ablation.ts';
import { breakdownOf, overallModelFraction } from './breakdown.ts';
import { EMPTY_LANE } from '../../shared/protocol/laneStats.ts';
import type { LaneStats } from '../../shared/protocol/engineProtocol.ts';
import { scaling } from './concurrency.ts';
import { drop } from './length.ts';
import { thresholdCandidates } from './servingCase.ts';
import { markdownTable } from '../../runtime/util/table.ts';
import { barChart, lineChart } from './svgChart.ts';

const rec = (sendMs: number, chunks: number[], tokens: number): RequestRecord => ({
  ok: true,
  sendMs,
  contentChunkMs: chunks,
  endMs: chunks[chunks.length - 1],
  outputTokens: tokens,
});

describe('ablation ratios', () => {
  it('gives each step its ratio to the one before and to the baseline', () => {
    const rows = withRatios([
      { step: 'a', tok_s: 100 },
      { step: 'b', tok_s: 150 },
      { step: 'c', tok_s: 300 },
    ]);
    expect(rows.map((r) => r.vs_previous)).toEqual([1, 1.5, 2]);
    expect(rows.map((r) => r.vs_baseline)).toEqual([1, 1.5, 3]);
  });
});

describe('length drop', () => {
  it('is the fraction of throughput lost; a gain is negative', () => {
    expect(drop(200, 150)).toBeCloseTo(0.25, 12);
    expect(drop(100, 110)).toBeCloseTo(-0.1, 12);
  });
});

describe('concurrency scaling', () => {
  it('growth is the throughput ratio; retention is TPOT alone over TPOT under load', () => {
    const one = servingMetrics([rec(0, [10, 20, 30], 3)]); // 3 tokens in 30 ms, TPOT 10
    const many = servingMetrics([rec(0, [10, 30, 50], 3), rec(0, [10, 30, 50], 3), rec(0, [10, 30, 50], 3), rec(0, [10, 30, 50], 3)]); // TPOT 20
    const s = scaling(one, many);
    expect(s.throughput_growth).toBeCloseTo(((12 / 50) * 1000) / ((3 / 30) * 1000), 12);
    expect(s.single_user_retention).toBeCloseTo(0.5, 12);
  });
});

describe('poolRuns', () => {
  it('divides pooled tokens by the summed spans, not by the time between runs', () => {
    const mk = (offset: number): ServingRun => {
      const records = [rec(offset, [offset + 10, offset + 20], 2)];
      return { metrics: servingMetrics(records), records, tokensByModel: { small: 2 }, handoffs: 1, discardedTokens: 0 };
    };
    const p = poolRuns([mk(0), mk(10_000)]);
    expect(p.metrics.durationMs).toBe(40);
    expect(p.metrics.outputThroughputTokS).toBeCloseTo(100, 9);
    expect(p.tokensByModel.small).toBe(4);
    expect(p.handoffs).toBe(2);
    expect(p.metrics.completed).toBe(2);
  });
});

describe('breakdown', () => {
  it("splits each lane's busy time from its counters into model, runner overhead and routing", () => {
    const lane = (name: string, batches: number, rows: number, busyMs: number, batchMs: number, modelMs: number): LaneStats => ({
      ...EMPTY_LANE,
      name,
      threshold: 1,
      batches,
      rows,
      busyMs,
      batchMs,
      modelMs,
    });
    const lanes = breakdownOf([lane('small', 2, 6, 17, 20, 14), lane('large', 1, 1, 40, 40, 40), lane('medium', 0, 0, 0, 0, 0)]);
    expect(lanes.map((l) => l.lane)).toEqual(['small', 'large']); // a lane that ran nothing is left out
    const small = lanes[0];
    expect(small.batches).toBe(2);
    expect(small.mean_batch).toBe(3);
    expect(small.busy_ms).toBe(20);
    expect(small.model_ms).toBe(14);
    expect(small.runner_other_ms).toBe(3);
    expect(small.route_ms).toBe(3);
    expect(small.model_ms + small.runner_other_ms + small.route_ms).toBe(small.busy_ms);
    expect(small.model_fraction).toBeCloseTo(0.7, 12);
    expect(overallModelFraction(lanes)).toBeCloseTo(54 / 60, 12);
  });
});

describe('threshold candidates', () => {
  it('stay feasible: Σ(T − 1) < N with the other lanes at 1', () => {
    expect(thresholdCandidates(1)).toEqual([1]);
    expect(thresholdCandidates(4)).toEqual([1, 2, 3, 4]);
    expect(thresholdCandidates(16)).toEqual([1, 2, 3, 4, 6, 8, 12, 16]);
    for (const n of [1, 2, 4, 8, 16]) for (const t of thresholdCandidates(n)) expect(t - 1).toBeLessThan(n);
  });
});

describe('outputs', () => {
  it('renders markdown tables and well-formed SVG', () => {
    expect(markdownTable([{ a: 'x', b: 1.23456 }])).toBe('| a | b |\n|---|---:|\n| x | 1.235 |\n');
    const bar = barChart({
      title: 'T <1>',
      yLabel: 'tok/s',
      categories: ['r2r', 'me'],
      series: [
        { name: 'A', values: [10, 20] },
        { name: 'B', values: [5, NaN] },
      ],
    });
    expect(bar.startsWith('<svg')).toBe(true);
    expect(bar).toContain('T &lt;1&gt;');
    expect(bar.match(/<rect [^>]*fill="#/g)!.length).toBe(3 + 2); // 3 finite bars + 2 legend swatches
    const line = lineChart({
      title: 'L',
      xLabel: 'N',
      yLabel: 'y',
      logX: true,
      series: [
        {
          name: 's',
          points: [
            [1, 1],
            [16, 8],
          ],
        },
      ],
    });
    expect(line).toContain('<polyline');
    expect(line.trim().endsWith('</svg>')).toBe(true);
  });
});
