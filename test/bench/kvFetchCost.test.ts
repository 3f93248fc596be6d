// The models suite's KV-fetch cell times the fixture family's small model both ways and finds the KV outputs cost a visible share of a step.
import { describe, expect, it } from 'vitest';
import { kvFetchCost } from './kvFetchCost.ts';
import { tinyModelDir } from '../support/tinyFamily.ts';

describe('kvFetchCost', () => {
  it('times one decode step with and without the present.* outputs', async () => {
    const k = await kvFetchCost(tinyModelDir('small'), { batch: 8, ctx: 150, steps: 80, rounds: 6 });
    expect(k).toMatchObject({ model: 'small', batch: 8, ctx: 150 });
    expect(k.logits_only_us).toBeGreaterThan(0);
    // 0.24–0.40 here (some runs beside a CI run); the same outputs fetched both ways read −0.04 … 0.06
    expect(k.kv_fetch_share).toBeGreaterThan(0.15);
    expect(k.kv_fetch_share).toBeCloseTo(1 - k.logits_only_us / k.with_kv_us, 2);
  }, 60_000);
});
