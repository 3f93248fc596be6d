// The load generator's open-loop schedule (gamma / Poisson gaps) and goodput SLOs: parsing, per-request checks, the aggregate.
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../shared/rng.ts';
import { arrivalTimesMs } from '../../runtime/loadgen/arrivals.ts';
import { meetsSlo, parseGoodput } from '../../runtime/loadgen/goodput.ts';
import { servingMetrics, type RequestRecord } from '../../runtime/loadgen/requestMetrics.ts';
import { mean } from '../../runtime/util/stats.ts';

const gaps = (t: number[]) => t.slice(1).map((x, i) => x - t[i]);
const cv = (v: number[]) => {
  const m = mean(v);
  return Math.sqrt(mean(v.map((x) => (x - m) ** 2))) / m;
};

describe('arrivalTimesMs', () => {
  it('is the same schedule for the same seed and a different one for another seed', () => {
    const a = arrivalTimesMs(50, 10, 1, mulberry32(7));
    expect(arrivalTimesMs(50, 10, 1, mulberry32(7))).toEqual(a);
    expect(arrivalTimesMs(50, 10, 1, mulberry32(8))).not.toEqual(a);
    expect(a[0]).toBe(0);
    expect(gaps(a).every((g) => g > 0)).toBe(true);
  });

  it('has mean gap 1/rate, and coefficient of variation 1/√k for burstiness k (1: Poisson)', () => {
    for (const k of [0.25, 1, 4]) {
      const g = gaps(arrivalTimesMs(20_001, 50, k, mulberry32(42)));
      expect(mean(g) / 20, `k=${k} mean`).toBeGreaterThan(0.97);
      expect(mean(g) / 20, `k=${k} mean`).toBeLessThan(1.03);
      expect(cv(g) * Math.sqrt(k), `k=${k} cv`).toBeGreaterThan(0.93);
      expect(cv(g) * Math.sqrt(k), `k=${k} cv`).toBeLessThan(1.07);
    }
  });

  it('rate ∞ puts every request at 0 and draws nothing; a rate or burstiness ≤ 0 is refused', () => {
    let draws = 0;
    const rng = () => (draws++, 0.5);
    expect(arrivalTimesMs(5, Infinity, 1, rng)).toEqual([0, 0, 0, 0, 0]);
    expect(draws).toBe(0);
    expect(() => arrivalTimesMs(5, 0, 1, rng)).toThrow(RangeError);
    expect(() => arrivalTimesMs(5, -1, 1, rng)).toThrow(RangeError);
    expect(() => arrivalTimesMs(5, 1, 0, rng)).toThrow(RangeError);
  });
});

describe('parseGoodput', () => {
  it('reads ttft, tpot and e2el pairs separated by spaces or commas', () => {
    expect(parseGoodput('ttft:500 tpot:50 e2el:2000')).toEqual({ ttftMs: 500, tpotMs: 50, e2elMs: 2000 });
    expect(parseGoodput('tpot:12.5,e2el:1e3')).toEqual({ tpotMs: 12.5, e2elMs: 1000 });
  });

  it('refuses unknown metrics, bad numbers, malformed or repeated pairs with one line naming the pair', () => {
    const cases: [string, RegExp][] = [
      ['foo:1', /^--goodput: unknown metric "foo"; known: ttft, tpot, e2el$/],
      ['ttft:abc', /^--goodput: ttft must be a number of ms > 0, got "abc"$/],
      ['ttft:-5', /^--goodput: ttft must be a number of ms > 0, got "-5"$/],
      ['ttft:0', /must be a number of ms > 0/],
      ['ttft:', /ttft must be a number of ms > 0, got ""/],
      ['ttft', /^--goodput takes metric:MS pairs .*, got "ttft"$/],
      ['ttft:1:2', /got "ttft:1:2"/],
      ['ttft:1 ttft:2', /^--goodput: ttft is given twice$/],
      ['  ', /needs at least one of/],
    ];
    for (const [spec, re] of cases) expect(() => parseGoodput(spec), spec).toThrow(re);
  });
});

describe('meetsSlo and goodput', () => {
  const m = { ttftMs: 100, tpotMs: 10, e2eMs: 1000 };

  it('a request counts only when it meets every given bound', () => {
    expect(meetsSlo(m, { ttftMs: 100, tpotMs: 10, e2elMs: 1000 })).toBe(true); // bounds are inclusive
    expect(meetsSlo(m, { ttftMs: 99, tpotMs: 10, e2elMs: 1000 })).toBe(false);
    expect(meetsSlo(m, { ttftMs: 500, tpotMs: 9, e2elMs: 5000 })).toBe(false);
    expect(meetsSlo(m, { ttftMs: 500, tpotMs: 50, e2elMs: 999 })).toBe(false);
    expect(meetsSlo(m, { tpotMs: 10 })).toBe(true);
    expect(meetsSlo(m, {})).toBe(true);
    // one output token: no TPOT, so any TPOT bound holds (vLLM counts it as 0)
    expect(meetsSlo({ ttftMs: 5, tpotMs: undefined, e2eMs: 5 }, { tpotMs: 1 })).toBe(true);
  });

  it('servingMetrics: goodput = requests meeting the SLO / duration; failures never count; no SLO, no goodput', () => {
    const rec = (over: Partial<RequestRecord>): RequestRecord => ({ ok: true, sendMs: 0, contentChunkMs: [], endMs: 0, outputTokens: 0, ...over });
    const records = [
      rec({ sendMs: 0, contentChunkMs: [10, 20, 30], endMs: 30, outputTokens: 3 }), // ttft 10, tpot 10, e2e 30
      rec({ sendMs: 0, contentChunkMs: [40, 60], endMs: 60, outputTokens: 2 }), // ttft 40, tpot 20, e2e 60
      rec({ sendMs: 10, contentChunkMs: [15, 100], endMs: 100, outputTokens: 2 }), // ttft 5, tpot 85, e2e 90
      rec({ ok: false, sendMs: 0, endMs: 1, error: 'HTTP 500' }),
    ];
    const m = servingMetrics(records, undefined, { ttftMs: 50, tpotMs: 25 });
    expect(m.durationMs).toBe(100);
    expect(m.sloMet).toBe(2);
    expect(m.goodputReqS).toBeCloseTo(20, 9);
    expect(m.requestThroughputRps).toBeCloseTo(30, 9);
    expect(m.slo).toEqual({ ttftMs: 50, tpotMs: 25 });
    expect(servingMetrics(records, undefined, { e2elMs: 1 }).goodputReqS).toBe(0);
    const plain = servingMetrics(records);
    expect(plain.goodputReqS).toBeUndefined();
    expect('sloMet' in plain).toBe(false);
  });
});
