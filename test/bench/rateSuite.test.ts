// The rate suite's report: rows and slo_choice with the fields issue 19 names, from a short sweep in virtual time.
import { describe, expect, it } from 'vitest';
import { run } from './rate.ts';

describe('bench rate', () => {
  it('reports every runtime at every rate and the SLO-aware choice against the measured sweep', async () => {
    const r = await run({ flags: { quick: '1', rates: '0.5,6', 'max-wait-choices': '5,100', requests: '60', 'slo-tpot-ms': '35', runners: 'none' } });
    const rows = r.results.rows as Record<string, unknown>[];
    const choice = r.results.slo_choice as Record<string, unknown>[];
    expect(rows).toHaveLength(6);
    for (const row of rows)
      expect(Object.keys(row).sort()).toEqual(['goodput_req_s', 'p99_tpot_ms', 'p99_ttft_ms', 'profile', 'rate', 'runtime', 'throughput_tok_s']);
    expect(choice.map((c) => c.rate)).toEqual([0.5, 6]);
    for (const c of choice) {
      expect(c).toMatchObject({ profile: 'paper-virtual' });
      for (const k of ['chosen', 'sweep_best_goodput', 'chosen_goodput', 'meets_slo']) expect(c).toHaveProperty(k);
      // The choice is one of the swept settings, so it cannot beat the sweep's best.
      expect(c.chosen_goodput as number).toBeLessThanOrEqual((c.sweep_best_goodput as number) + 1e-9);
    }
    // At light load a long deadline with a threshold above 1 (the throughput-only pick) waits for company; the SLO-aware pick does not.
    const light = (runtime: string) => rows.find((x) => x.runtime === runtime && x.rate === 0.5)!;
    expect(light('tokenrouter').p99_tpot_ms as number).toBeLessThan(light('throughput-only').p99_tpot_ms as number);
    expect(Object.keys(r.output!.charts!).sort()).toEqual(['goodput', 'p99_tpot']);
  }, 120_000);
});
