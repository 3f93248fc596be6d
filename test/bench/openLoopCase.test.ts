// The serving benches take the load generator's open-loop flags: --request-rate, --burstiness, --goodput reach every run and its report.
import { describe, expect, it } from 'vitest';
import { simulatedRunners } from './benchRunners.ts';
import { runFigures, runServingCase, servingDefaults, servingSettings } from './servingCase.ts';
import { SuiteFlags } from './suiteFlags.ts';

describe('open-loop serving cases', () => {
  it('reads the flags once, says them in the settings, and refuses bad values with one line', () => {
    const d = servingDefaults(new SuiteFlags({ 'request-rate': '40', burstiness: '0.5', goodput: 'ttft:200 e2el:1000' }));
    expect([d.requestRate, d.burstiness, d.slo]).toEqual([40, 0.5, { ttftMs: 200, e2elMs: 1000 }]);
    expect(servingSettings(d)).toMatchObject({
      arrivals: expect.stringMatching(/^open loop: 40 req\/s, gamma gaps with burstiness 0.5/),
      goodput_slo_ms: { ttftMs: 200, e2elMs: 1000 },
    });
    const closed = servingDefaults(new SuiteFlags({}));
    expect([closed.requestRate, closed.slo]).toEqual([Infinity, undefined]);
    expect(servingSettings(closed).arrivals).toMatch(/^closed loop/);
    expect(() => servingDefaults(new SuiteFlags({ 'request-rate': '-1' }))).toThrow(
      '--request-rate must be a number of requests per second > 0, or inf, got "-1"',
    );
    expect(() => servingDefaults(new SuiteFlags({ goodput: 'latency:5' }))).toThrow(/--goodput/);
  });

  it('runs a case at a request rate and reports goodput against the SLO (0 when no request can meet it)', async () => {
    const set = simulatedRunners(['small', 'large']);
    try {
      const base = {
        algorithm: 'r2r',
        lanes: { small: 'small', large: 'large' },
        mode: { label: 'tokenrouter', mode: 'async-delayed', retainState: true } as const,
        concurrency: 4,
        requests: 12,
        warmup: 0,
        maxTokens: 8,
        client: 'inline' as const,
        requestRate: 50,
        burstiness: 1,
      };
      const r = await runServingCase(set, { ...base, slo: { e2elMs: 60_000 } });
      const f = runFigures(r);
      // 12 arrivals at 50 req/s span ~220 ms on average: the run cannot be faster than its schedule
      expect(r.run.metrics.durationMs).toBeGreaterThan(100);
      expect(f.goodput_req_s).toBeCloseTo(f.request_throughput_req_s, 6);
      const none = runFigures(await runServingCase(set, { ...base, slo: { ttftMs: 0.000001 } }));
      expect(none.goodput_req_s).toBe(0);
      expect(runFigures(await runServingCase(set, { ...base, requestRate: Infinity })).goodput_req_s).toBeUndefined();
    } finally {
      await set.close();
    }
  }, 60_000);
});
