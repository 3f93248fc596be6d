// The bundled rate sweep's arithmetic: runs sized by time, the grid from measured capacities, and where standard serving first misses the SLO.
import { describe, expect, it } from 'vitest';
import { firstMiss, ratesFromCapacity, requestsForRate, sloCapacities } from './rateBundled.ts';

const row = (runtime: string, rate: number, goodput: number, tpot: number, ttft: number) => ({
  runtime,
  profile: 'bundled-http',
  rate,
  throughput_tok_s: 0,
  goodput_req_s: goodput,
  p99_tpot_ms: tpot,
  p99_ttft_ms: ttft,
});

describe('bundled rate sweep', () => {
  it('sizes a run by seconds of arrivals, never below the minimum', () => {
    expect(requestsForRate(2, { durationS: 30, minRequests: 120 })).toBe(120);
    expect(requestsForRate(12.5, { durationS: 30, minRequests: 120 })).toBe(375);
  });

  it("derives the grid from standard serving's capacity and adds a point past TokenRouter's", () => {
    const rates = ratesFromCapacity(10, 16, [0.3, 0.75, 1, 1.25]);
    expect(rates).toEqual([3, 7.5, 10, 13, 19]);
    // when the fractions already pass TokenRouter's capacity, no extra point
    expect(ratesFromCapacity(10, 11, [0.5, 1, 1.5])).toEqual([5, 10, 15]);
  });

  it('first miss: the first rate where standard serving breaks either p99 bound, with the ratio there', () => {
    const slo = { tpotMs: 20, ttftMs: 2000 };
    const rows = [
      row('tokenrouter', 4, 4, 8, 50),
      row('standard', 4, 4, 12, 80),
      row('tokenrouter', 8, 8, 9, 90),
      row('standard', 8, 3, 15, 2600),
      row('tokenrouter', 12, 9, 25, 3000),
      row('standard', 12, 1, 30, 9000),
    ];
    const fm = firstMiss(rows, [4, 8, 12], slo)!;
    expect(fm).toMatchObject({ rate: 8, missed: ['ttft'], standard_goodput_req_s: 3, tokenrouter_goodput_req_s: 8 });
    expect(fm.ratio).toBeCloseTo(8 / 3, 12);
    // a TPOT miss counts as well, and a bound exactly met is not a miss
    const tpot = firstMiss([row('tokenrouter', 4, 4, 8, 50), row('standard', 4, 2, 20.5, 2000)], [4], slo)!;
    expect(tpot.missed).toEqual(['tpot']);
    expect(firstMiss([row('tokenrouter', 4, 4, 8, 50), row('standard', 4, 4, 20, 2000)], [4], slo)).toBeNull();
  });
});

describe('highest rate within the SLO', () => {
  const slo = { tpotMs: 20, ttftMs: 2000 };
  it("is the last rate before a runtime's first miss; a later recovery does not count", () => {
    const rows = [
      row('tokenrouter', 4, 4, 8, 50),
      row('standard', 4, 4, 12, 80),
      row('tokenrouter', 8, 8, 9, 90),
      row('standard', 8, 3, 25, 200),
      row('tokenrouter', 12, 9, 25, 3000),
      row('standard', 12, 1, 10, 300),
    ];
    const c = sloCapacities(rows, [4, 8, 12], slo);
    expect(c.runtimes).toEqual([
      { runtime: 'tokenrouter', rate: 8, at_least: false },
      { runtime: 'standard', rate: 4, at_least: false },
    ]);
    expect(c.ratio).toBe(2);
    const never = sloCapacities([row('tokenrouter', 4, 4, 8, 50), row('standard', 4, 4, 30, 80)], [4], slo);
    expect(never.runtimes).toEqual([
      { runtime: 'tokenrouter', rate: 4, at_least: true },
      { runtime: 'standard', rate: null, at_least: false },
    ]);
    expect(never.ratio).toBeNull();
  });
});
