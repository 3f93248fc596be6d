// The load generator against a real server over simulated runners: counts, usage, timing order, concurrency bound.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchmarkServing } from '../../runtime/loadgen/benchmarkServing.ts';
import { benchmarkServingInChild } from '../../runtime/loadgen/remoteBenchmark.ts';
import { startTestServer, type TestServer } from '../server/testService.ts';

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
  });

  it('runs the same load from a child process and returns the raw records', async () => {
    const run = await benchmarkServingInChild({ baseUrl: srv.url, model: 'r2r', concurrency: 2, requests: 4, warmup: 1, maxTokens: 6 });
    expect(run.metrics.completed).toBe(4);
    expect(run.metrics.totalOutputTokens).toBe(24);
    expect(run.records.every((r) => r.contentChunkMs.length > 0 && r.outputTokens === 6)).toBe(true);
    expect(run.metrics.outputThroughputTokS).toBeGreaterThan(0);
  });

  it('a child whose warm-up fails entirely rejects with the server error', async () => {
    await expect(benchmarkServingInChild({ baseUrl: srv.url, model: 'nope', concurrency: 1, requests: 1, warmup: 1, maxTokens: 2 })).rejects.toThrow(/404|does not exist/);
  });

  it('records failures (unknown model) without throwing', async () => {
    const run = await benchmarkServing({ baseUrl: srv.url, model: 'nope', concurrency: 2, requests: 3, warmup: 0, maxTokens: 4, prompt: () => '1*2=' });
    expect(run.metrics.completed).toBe(0);
    expect(run.metrics.failed).toBe(3);
    expect(run.firstError).toMatch(/HTTP 404/);
  });
});
