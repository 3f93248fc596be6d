// Overload, full size: 1,000 concurrent streaming clients on loopback against a bounded admission queue.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectNothingLeft, expectStillServing, heapAfterGc, startRig, type Rig } from '../reliability/harness.ts';
import { formatOverload, runOverload } from '../reliability/overload.ts';

const MAX_CONCURRENCY = 64;
const MAX_QUEUE = 256;

let rig: Rig;
beforeAll(async () => {
  rig = await startRig({
    latency: { small: 3, large: 6 },
    config: { limits: { maxConcurrency: MAX_CONCURRENCY, maxQueue: MAX_QUEUE, maxTokens: 256, maxBodyBytes: 2 ** 20 } },
  });
});
afterAll(() => rig.close());

describe('overload: 1,000 concurrent streaming clients', () => {
  it('refuses past capacity with 429 and Retry-After, completes every admitted stream, stays within its bounds, leaks nothing', async () => {
    const heap0 = await heapAfterGc();
    const r = await runOverload(rig, 1000, 48);
    console.log(
      `[overload-1000] maxConcurrency ${MAX_CONCURRENCY}, maxQueue ${MAX_QUEUE}, 48 tokens each (r-stitch 3/4, small 1/4), simulated steps 3/6 ms: ${formatOverload(r)}`,
    );
    expect(r.other).toEqual([]);
    expect(r.completed).toBe(r.admitted);
    expect(r.refused429).toBeGreaterThan(0);
    expect(r.withRetryAfter).toBe(r.refused429);
    expect(r.peakActive).toBeLessThanOrEqual(MAX_CONCURRENCY);
    expect(r.peakQueued).toBeLessThanOrEqual(MAX_QUEUE);
    await expectNothingLeft(rig.service);
    await expectStillServing(rig.url);
    const heap1 = await heapAfterGc();
    console.log(
      `[overload-1000] heap after GC ${(heap0 / 2 ** 20).toFixed(1)} → ${(heap1 / 2 ** 20).toFixed(1)} MiB; invariant checks (one per batch) ${rig.service.cluster.laneStats().reduce((a, l) => a + l.batches, 0)}`,
    );
    expect(heap1 - heap0).toBeLessThan(16 * 2 ** 20);
  });
});
