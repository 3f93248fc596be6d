// Overload, short version (200 clients; 1,000 in test/stress): a bounded queue answers 429 + Retry-After, every admitted request completes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNothingLeft, expectStillServing, startRig, type Rig } from './harness.ts';
import { formatOverload, runOverload } from './overload.ts';

let rig: Rig;
beforeAll(async () => {
  // Capacity: 8 decoding + 16 waiting, each stream ~48 steps of 3–6 ms: arrivals outpace service.
  rig = await startRig({ latency: { small: 3, large: 6 }, config: { limits: { maxConcurrency: 8, maxQueue: 16, maxTokens: 256, maxBodyBytes: 2 ** 20 } } });
});
afterAll(() => rig.close());

describe('overload: 200 concurrent streaming clients', () => {
  it('refuses past capacity with 429 and Retry-After, completes every admitted stream, keeps its bounds, leaks nothing', async () => {
    const r = await runOverload(rig, 200, 48);
    console.log(`[overload-200] ${formatOverload(r)}`);
    expect(r.other).toEqual([]);
    expect(r.completed).toBe(r.admitted);
    expect(r.refused429).toBeGreaterThan(0);
    expect(r.withRetryAfter).toBe(r.refused429);
    expect(r.peakActive).toBeLessThanOrEqual(8);
    expect(r.peakQueued).toBeLessThanOrEqual(16);
    await expectNothingLeft(rig.service);
    await expectStillServing(rig.url);
  });
});
