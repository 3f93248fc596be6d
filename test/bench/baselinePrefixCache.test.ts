// --baseline-prefix-cache: standard serving's re-admissions copy cached KV (SGLang's radix cache) by default, and re-prefill in full with 0.
import { describe, expect, it } from 'vitest';
import { simulatedRunners } from './benchRunners.ts';
import { BASELINE, runServingCase, servingDefaults, servingSettings, type ServingMode } from './servingCase.ts';
import { SuiteFlags } from './suiteFlags.ts';

describe('the standard-serving baseline with and without a prefix cache', () => {
  it('reads the flag and says it in the settings', () => {
    expect(servingDefaults(new SuiteFlags({})).baselinePrefixCache).toBe(true);
    const off = servingDefaults(new SuiteFlags({ 'baseline-prefix-cache': '0' }));
    expect(off.baselinePrefixCache).toBe(false);
    expect(servingSettings(off).baseline_prefix_cache).toMatch(/^off: every return re-prefills/);
    expect(() => servingDefaults(new SuiteFlags({ 'baseline-prefix-cache': 'maybe' }))).toThrow('--baseline-prefix-cache must be true or false, got "maybe"');
  });

  it('off: a return finds nothing cached; on: it re-admits from its own cached KV; TokenRouter mode keeps its cache either way', async () => {
    const set = simulatedRunners(['small', 'large']);
    try {
      const base = {
        algorithm: 'r2r',
        lanes: { small: 'small', large: 'large' },
        concurrency: 4,
        requests: 16,
        warmup: 0,
        maxTokens: 24,
        ignoreEos: true,
        client: 'inline' as const,
      };
      const cache = async (mode: ServingMode, baselinePrefixCache: boolean) => {
        const r = await runServingCase(set, { ...base, mode, baselinePrefixCache });
        expect(r.run.metrics.completed).toBe(16);
        return { queries: r.lanes.reduce((a, l) => a + l.prefixQueries, 0), hits: r.lanes.reduce((a, l) => a + l.prefixHits, 0) };
      };
      expect((await cache(BASELINE, true)).hits).toBeGreaterThan(0);
      expect(await cache(BASELINE, false)).toEqual({ queries: 0, hits: 0 });
      // the flag is the baseline's alone: a run that retains state keeps the configured cache
      expect((await cache({ label: 'tokenrouter', mode: 'async-delayed', retainState: true }, false)).queries).toBeGreaterThan(0);
    } finally {
      await set.close();
    }
  }, 60_000);
});
