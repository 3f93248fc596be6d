// The load generator against a real server over simulated runners: counts, usage, timing order, concurrency bound, open-loop arrivals, goodput.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchmarkServing } from '../../runtime/loadgen/benchmarkServing.ts';
import { arrivalTimesMs } from '../../runtime/loadgen/arrivals.ts';
import type { RequestRecord } from '../../runtime/loadgen/requestMetrics.ts';
import { benchmarkServingInChild } from '../../runtime/loadgen/remoteBenchmark.ts';
import { mulberry32 } from '../../shared/rng.ts';
import { startTestServer, type TestServer } from '../http/testService.ts';

/** Most requests between send and end at any instant: the client side of the concurrency cap. */
function peakInFlight(records: readonly RequestRecord[]): number {
  const edges = records.flatMap((r) => [[r.sendMs, 1] as const, [r.endMs, -1] as const]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let peak = 0;
  for (const [, d] of edges) peak = Math.max(peak, (now += d));
  return peak;
}

describe('benchmarkServing over HTTP', () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startTestServer({ latency: { small: 1, large: 2 }, config: { limits: { maxConcurrency: 8 } } });
  });
  afterAll(async () => {
    await srv?.close();
  });

  it('runs warm-up plus measured requests at a fixed concurrency and counts committed tokens from usage', async () => {
    let peak = 0;
    const timer = setInterval(() => (peak = Math.max(peak, srv.service.cluster.activeCount)), 1);
    const seen: number[] = [];
    const run = await benchmarkServing({
      baseUrl: srv.url,
      model: 'r-stitch',
      concurrency: 3,
      requests: 9,
      warmup: 2,
      maxTokens: 12,
      prompt: (i) => `${100 + Math.abs(i)}*7=`,
      onProgress: (d) => seen.push(d),
    });
    clearInterval(timer);
    expect(run.metrics.completed).toBe(9);
    expect(run.metrics.failed).toBe(0);
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(peak).toBeLessThanOrEqual(3);
    for (const r of run.records) {
      expect(r.outputTokens).toBe(12); // simulated runners never emit EOS
      expect(r.promptTokens).toBeGreaterThan(0);
      expect(r.contentChunkMs.length).toBeGreaterThan(0);
      expect(r.contentChunkMs[0]).toBeGreaterThanOrEqual(r.sendMs);
      expect(r.endMs).toBeGreaterThanOrEqual(r.contentChunkMs[r.contentChunkMs.length - 1]);
    }
    expect(run.metrics.totalOutputTokens).toBe(9 * 12);
    expect(Object.values(run.tokensByModel).reduce((a, b) => a + b, 0)).toBe(9 * 12);
    expect(run.metrics.ttftMs.mean).toBeGreaterThan(0);
    expect(run.metrics.tpotMs.count).toBe(9);
    // nothing new asked for: a closed loop with no schedule and no goodput
    expect(run.scheduledMs).toBeUndefined();
    expect(run.metrics.goodputReqS).toBeUndefined();
  });

  it('open loop at a finite rate: each request is sent at or after its seeded arrival, spread as scheduled', async () => {
    const load = {
      baseUrl: srv.url,
      model: 'r-stitch',
      concurrency: 8,
      requests: 12,
      warmup: 2,
      maxTokens: 4,
      requestRate: 40,
      seed: 5,
      prompt: (i: number) => `${100 + Math.abs(i)}*7=`,
    };
    const run = await benchmarkServing(load);
    expect(run.metrics.completed).toBe(12);
    const at = run.scheduledMs!;
    const expected = arrivalTimesMs(12, 40, 1, mulberry32(5));
    at.forEach((t, k) => expect(t - at[0]).toBeCloseTo(expected[k], 6));
    run.records.forEach((r, k) => expect(r.sendMs, `request ${k}`).toBeGreaterThanOrEqual(at[k]));
    // the sends span the schedule (≈ 11 gaps of 25 ms), not the few ms a closed loop's burst would
    const sendSpan = run.records[11].sendMs - run.records[0].sendMs;
    const span = expected[11];
    expect(span).toBeGreaterThan(100);
    expect(sendSpan).toBeGreaterThan(span * 0.9);
    expect(sendSpan).toBeLessThan(span + 150);
    expect(run.metrics.durationMs).toBeGreaterThan(span);
  });

  it('open loop past capacity: the cap still holds, and goodput ≤ request throughput (0 for an SLO nobody meets)', async () => {
    let peak = 0;
    const timer = setInterval(() => (peak = Math.max(peak, srv.service.cluster.activeCount)), 1);
    const base = {
      baseUrl: srv.url,
      model: 'r-stitch',
      concurrency: 2,
      requests: 10,
      warmup: 0,
      maxTokens: 10,
      requestRate: 1000,
      burstiness: 0.5,
      prompt: (i: number) => `${100 + Math.abs(i)}*3=`,
    };
    const loose = await benchmarkServing({ ...base, slo: { ttftMs: 60_000, tpotMs: 60_000, e2elMs: 60_000 } });
    const none = await benchmarkServing({ ...base, slo: { ttftMs: 0.001 } });
    clearInterval(timer);
    expect(peak).toBeLessThanOrEqual(2);
    for (const run of [loose, none]) {
      expect(run.metrics.completed).toBe(10);
      expect(peakInFlight(run.records)).toBe(2);
      expect(run.metrics.goodputReqS!).toBeLessThanOrEqual(run.metrics.requestThroughputRps);
    }
    // waiting for a permit delays sends past their arrivals: the last one goes out well after its slot
    expect(loose.records[9].sendMs - loose.scheduledMs![9]).toBeGreaterThan(5);
    expect(loose.metrics.sloMet).toBe(10);
    expect(loose.metrics.goodputReqS).toBeCloseTo(loose.metrics.requestThroughputRps, 9);
    expect(none.metrics.sloMet).toBe(0);
    expect(none.metrics.goodputReqS).toBe(0);
  });

  it('open loop behind the cap: each request records its arrival, and TTFT includes the wait for a permit (unless latencyFrom send)', async () => {
    const base = {
      baseUrl: srv.url,
      model: 'r-stitch',
      concurrency: 1,
      requests: 6,
      warmup: 0,
      maxTokens: 8,
      requestRate: 1000,
      seed: 3,
      prompt: (i: number) => `${100 + Math.abs(i)}*3=`,
    };
    const run = await benchmarkServing(base);
    const waits = run.records.map((r, k) => {
      expect(r.arrivalMs).toBe(run.scheduledMs![k]);
      return r.sendMs - r.arrivalMs!;
    });
    // one permit and arrivals 1 ms apart: the last request waited for the five before it
    expect(waits[5]).toBeGreaterThan(5);
    const fromSend = run.records[5].contentChunkMs[0] - run.records[5].sendMs;
    expect(run.metrics.ttftMs.max).toBeGreaterThanOrEqual(fromSend + waits[5] - 1e-9);
    expect(run.metrics.queueMs.max).toBeCloseTo(Math.max(...waits), 9);
    const vllm = await benchmarkServing({ ...base, latencyFrom: 'send' });
    expect(vllm.records.every((r) => r.arrivalMs === undefined)).toBe(true);
    expect(vllm.metrics.queueMs.max).toBe(0);
  });

  it('a child process takes the rate, seed and SLO and returns the schedule with its records', async () => {
    const run = await benchmarkServingInChild({
      baseUrl: srv.url,
      model: 'r2r',
      concurrency: 4,
      requests: 6,
      warmup: 1,
      maxTokens: 4,
      requestRate: 50,
      burstiness: 2,
      seed: 9,
      slo: { ttftMs: 0.001, e2elMs: 60_000 },
    });
    expect(run.metrics.completed).toBe(6);
    const expected = arrivalTimesMs(6, 50, 2, mulberry32(9));
    run.scheduledMs!.forEach((t, k) => expect(t - run.scheduledMs![0]).toBeCloseTo(expected[k], 6));
    run.records.forEach((r, k) => expect(r.sendMs).toBeGreaterThanOrEqual(run.scheduledMs![k]));
    // the arrivals cross the process boundary, so the parent's metrics count from them too
    run.records.forEach((r, k) => expect(r.arrivalMs).toBeCloseTo(run.scheduledMs![k], 6));
    expect(run.metrics.slo).toEqual({ ttftMs: 0.001, e2elMs: 60_000 });
    expect(run.metrics.goodputReqS).toBe(0);
  });

  it('runs the same load from a child process and returns the raw records', async () => {
    const run = await benchmarkServingInChild({ baseUrl: srv.url, model: 'r2r', concurrency: 2, requests: 4, warmup: 1, maxTokens: 6 });
    expect(run.metrics.completed).toBe(4);
    expect(run.metrics.totalOutputTokens).toBe(24);
    expect(run.records.every((r) => r.contentChunkMs.length > 0 && r.outputTokens === 6)).toBe(true);
    expect(run.metrics.outputThroughputTokS).toBeGreaterThan(0);
  });

  it('a child whose warm-up fails entirely rejects with the server error', async () => {
    await expect(benchmarkServingInChild({ baseUrl: srv.url, model: 'nope', concurrency: 1, requests: 1, warmup: 1, maxTokens: 2 })).rejects.toThrow(
      /404|does not exist/,
    );
  });

  it('records failures (unknown model) without throwing', async () => {
    const run = await benchmarkServing({ baseUrl: srv.url, model: 'nope', concurrency: 2, requests: 3, warmup: 0, maxTokens: 4, prompt: () => '1*2=' });
    expect(run.metrics.completed).toBe(0);
    expect(run.metrics.failed).toBe(3);
    expect(run.firstError).toMatch(/HTTP 404/);
  });
});
