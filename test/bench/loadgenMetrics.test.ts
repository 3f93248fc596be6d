// The load generator's metric math (docs/benchmarks.md, "How it is measured"): TTFT, ITL, TPOT, E2E, throughput, numpy-style percentiles.
import { describe, expect, it } from 'vitest';
import { requestMetrics, servingMetrics, type RequestRecord } from '../../runtime/loadgen/requestMetrics.ts';
import { mean, percentile, summarize } from '../../runtime/util/stats.ts';
import { Semaphore } from '../../runtime/loadgen/semaphore.ts';

const rec = (over: Partial<RequestRecord>): RequestRecord => ({ ok: true, sendMs: 0, contentChunkMs: [], endMs: 0, outputTokens: 0, ...over });

describe('percentile', () => {
  it('matches numpy.percentile (linear) on known values', () => {
    // numpy: np.percentile([1,2,3,4], [0,25,50,99,100]) = [1, 1.75, 2.5, 3.97, 4]
    const v = [4, 1, 3, 2];
    expect(percentile(v, 0)).toBe(1);
    expect(percentile(v, 25)).toBeCloseTo(1.75, 12);
    expect(percentile(v, 50)).toBeCloseTo(2.5, 12);
    expect(percentile(v, 99)).toBeCloseTo(3.97, 12);
    expect(percentile(v, 100)).toBe(4);
    // np.percentile(range(1, 101), 99) = 99.01
    expect(
      percentile(
        Array.from({ length: 100 }, (_, i) => i + 1),
        99,
      ),
    ).toBeCloseTo(99.01, 10);
  });

  it('handles one value and no values', () => {
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNaN();
    expect(summarize([]).count).toBe(0);
    expect(() => percentile([1], 101)).toThrow(RangeError);
  });

  it('does not reorder its input', () => {
    const v = [3, 1, 2];
    percentile(v, 50);
    expect(v).toEqual([3, 1, 2]);
  });

  it('summarize gives mean, median and p99', () => {
    const s = summarize([1, 2, 3, 4, 10]);
    expect(s.mean).toBeCloseTo(4, 12);
    expect(s.median).toBe(3);
    expect(s.p99).toBeCloseTo(4 + 0.96 * 6, 10); // rank 3.96 between 4 and 10
    expect(s.min).toBe(1);
    expect(s.max).toBe(10);
    expect(mean([])).toBeNaN();
  });
});

describe('requestMetrics', () => {
  it('TTFT is send → first content chunk; E2E send → last chunk; ITL the gaps between content chunks', () => {
    const m = requestMetrics(rec({ sendMs: 100, contentChunkMs: [130, 140, 155, 160], endMs: 162, outputTokens: 4 }));
    expect(m.ttftMs).toBe(30);
    expect(m.e2eMs).toBe(62);
    expect(m.itlMs).toEqual([10, 15, 5]);
    // TPOT = (latency − TTFT) / (output_len − 1) = (62 − 30) / 3
    expect(m.tpotMs).toBeCloseTo(32 / 3, 12);
  });

  it('TPOT uses committed tokens, not chunks: one chunk may carry several tokens', () => {
    const m = requestMetrics(rec({ sendMs: 0, contentChunkMs: [10, 20], endMs: 20, outputTokens: 11 }));
    expect(m.tpotMs).toBeCloseTo(1, 12);
    expect(m.itlMs).toEqual([10]);
  });

  it('has no TPOT for a one-token output and falls back to the end for TTFT when nothing had content', () => {
    expect(requestMetrics(rec({ sendMs: 0, contentChunkMs: [5], endMs: 6, outputTokens: 1 })).tpotMs).toBeUndefined();
    const empty = requestMetrics(rec({ sendMs: 0, contentChunkMs: [], endMs: 9, outputTokens: 0 }));
    expect(empty.ttftMs).toBe(9);
    expect(empty.itlMs).toEqual([]);
  });
});

describe('open-loop latency from the arrival', () => {
  // Arrived at 0, waited 100 ms for a permit, first content 10 ms after the send, 10 tokens by 200.
  const queued = rec({ arrivalMs: 0, sendMs: 100, contentChunkMs: [110, 150, 200], endMs: 200, outputTokens: 10 });

  it('TTFT and E2E count from the scheduled arrival, so the wait for a permit is in them; TPOT is unchanged', () => {
    const m = requestMetrics(queued);
    expect(m.queueMs).toBe(100);
    expect(m.ttftMs).toBe(110); // counted from the send it would be 10
    expect(m.e2eMs).toBe(200);
    expect(m.tpotMs).toBeCloseTo(90 / 9, 12);
    // without an arrival (closed loop, or --latency-from send) it is vLLM's send-based figure
    const fromSend = requestMetrics({ ...queued, arrivalMs: undefined });
    expect([fromSend.ttftMs, fromSend.e2eMs, fromSend.queueMs]).toEqual([10, 100, 0]);
    expect(fromSend.tpotMs).toBeCloseTo(m.tpotMs!, 12);
  });

  it('a TTFT bound the server meets is missed once the queue the rate built is counted; the run spans from the first arrival', () => {
    const early = rec({ arrivalMs: 0, sendMs: 0, contentChunkMs: [10, 20], endMs: 20, outputTokens: 2 });
    const late = rec({ arrivalMs: 5, sendMs: 2_505, contentChunkMs: [2_515, 2_525], endMs: 2_525, outputTokens: 2 });
    const m = servingMetrics([early, late], undefined, { ttftMs: 2_000 });
    expect(m.sloMet).toBe(1);
    expect(m.queueMs.max).toBe(2_500);
    expect(m.durationMs).toBe(2_525);
    // the old accounting (from the send) would have let both through
    const sendOnly = servingMetrics(
      [early, late].map((r) => ({ ...r, arrivalMs: undefined })),
      undefined,
      { ttftMs: 2_000 },
    );
    expect(sendOnly.sloMet).toBe(2);
  });

  it('an arrival after the send (a clock mismatch) never makes latency negative: it starts at the send', () => {
    const m = requestMetrics(rec({ arrivalMs: 50, sendMs: 40, contentChunkMs: [45], endMs: 45, outputTokens: 1 }));
    expect(m.ttftMs).toBe(5);
    expect(m.queueMs).toBe(0);
  });
});

describe('servingMetrics', () => {
  const records = [
    rec({ sendMs: 0, contentChunkMs: [10, 20, 30], endMs: 30, outputTokens: 3 }),
    rec({ sendMs: 5, contentChunkMs: [25, 45], endMs: 50, outputTokens: 5 }),
    rec({ ok: false, sendMs: 8, contentChunkMs: [], endMs: 12, outputTokens: 0, error: 'HTTP 500' }),
  ];
  const m = servingMetrics(records);

  it('throughput = Σ committed output tokens / (last completion − first dispatch)', () => {
    expect(m.durationMs).toBe(50);
    expect(m.totalOutputTokens).toBe(8);
    expect(m.outputThroughputTokS).toBeCloseTo((8 / 50) * 1000, 9);
    expect(m.requestThroughputRps).toBeCloseTo((2 / 50) * 1000, 9);
  });

  it('failed requests are counted apart and excluded from latency figures', () => {
    expect(m.completed).toBe(2);
    expect(m.failed).toBe(1);
    expect(m.ttftMs.count).toBe(2);
    expect(m.ttftMs.mean).toBeCloseTo((10 + 20) / 2, 12);
    expect(m.e2eMs.mean).toBeCloseTo((30 + 45) / 2, 12);
    // TPOTs: (30 − 10)/2 = 10 and (45 − 20)/4 = 6.25
    expect(m.tpotMs.mean).toBeCloseTo(8.125, 12);
    // ITLs pooled over requests: [10, 10] and [20]
    expect(m.itlMs.count).toBe(3);
    expect(m.itlMs.median).toBe(10);
    expect(m.meanOutputTokens).toBe(4);
  });

  it('an empty run is all zeros, not NaN throughput', () => {
    const e = servingMetrics([]);
    expect(e.outputThroughputTokS).toBe(0);
    expect(e.completed).toBe(0);
  });
});

describe('Semaphore', () => {
  it('never lets more than its permits run at once, and serves waiters in order', async () => {
    const sem = new Semaphore(3);
    let running = 0;
    let peak = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        sem.with(async () => {
          order.push(i);
          running++;
          peak = Math.max(peak, running);
          await new Promise((r) => setTimeout(r, 1 + (i % 3)));
          running--;
        }),
      ),
    );
    expect(peak).toBe(3);
    expect(order.slice(0, 3)).toEqual([0, 1, 2]);
    expect([...order].sort((a, b) => a - b)).toEqual(order.slice().sort((a, b) => a - b));
    expect(sem.waiting).toBe(0);
  });

  it('releases the permit when the task throws', async () => {
    const sem = new Semaphore(1);
    await expect(sem.with(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await sem.with(async () => undefined);
    expect(() => new Semaphore(0)).toThrow(RangeError);
  });
});
