// Seeded fuzz, short version (500 bad requests; the 10,000 one is in test/stress): only 4xx answers, nothing leaks, the server serves on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFuzz } from './fuzzRequests.ts';
import { expectNothingLeft, expectStillServing, heapAfterGc, startRig, type Rig } from './harness.ts';

let rig: Rig;
beforeAll(async () => {
  rig = await startRig({ config: { limits: { maxConcurrency: 8, maxQueue: 64, maxTokens: 256, maxBodyBytes: 2 ** 20 } } });
});
afterAll(() => rig.close());

const FUZZ_SEED = 20261129;

describe('fuzz: 500 generated bad requests', () => {
  it('answers every one with a JSON 4xx, keeps serving, leaks nothing', async () => {
    // Warm-up: the first requests fill caches (compiled algorithms, zod, metrics) that are not leaks.
    await runFuzz(rig.url, FUZZ_SEED + 1, 0, 100, 8, { allowHuge: false });
    await expectStillServing(rig.url);
    const heap0 = await heapAfterGc();
    const versions0 = JSON.stringify(rig.service.registry.list());

    const out = await runFuzz(rig.url, FUZZ_SEED, 0, 500, 8, { allowHuge: false });
    const heap1 = await heapAfterGc();
    console.log(
      `[fuzz-500] statuses ${JSON.stringify(out.byStatus)} families ${JSON.stringify(out.byFamily)} heap ${(heap0 / 2 ** 20).toFixed(1)} → ${(heap1 / 2 ** 20).toFixed(1)} MiB`,
    );

    expect(out.failures.slice(0, 5)).toEqual([]);
    expect(out.sent).toBe(500);
    expect(Object.keys(out.byStatus).every((s) => /^4\d\d$/.test(s))).toBe(true);
    // Every family of defect was exercised.
    expect(Object.keys(out.byFamily).sort()).toEqual(['admin', 'deploy', 'garbage', 'route', 'schema', 'syntax', 'transport']);
    // Refused deploys and activations changed nothing.
    expect(JSON.stringify(rig.service.registry.list())).toBe(versions0);
    expect(rig.service.cluster.laneStats().map((l) => l.threshold)).toEqual([1, 1, 1]);
    await expectStillServing(rig.url);
    await expectNothingLeft(rig.service);
    expect(heap1 - heap0).toBeLessThan(16 * 2 ** 20);
  });
});
