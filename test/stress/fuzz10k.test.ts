// Seeded fuzz, full size: 10,000 generated bad requests (10 MB bodies and gzip bombs included): no 5xx, no crash, memory back to baseline.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFuzz } from '../reliability/fuzzRequests.ts';
import { expectNothingLeft, expectStillServing, heapAfterGc, startRig, type Rig } from '../reliability/harness.ts';

const SEED = 20261129;
const TOTAL = 10_000;

let rig: Rig;
beforeAll(async () => {
  rig = await startRig({ config: { limits: { maxConcurrency: 16, maxQueue: 64, maxTokens: 256, maxBodyBytes: 2 ** 20 } } });
});
afterAll(() => rig.close());

const handles = () => (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles().length;

describe(`fuzz: ${TOTAL} generated bad requests`, () => {
  it('answers every one with a JSON 4xx, never crashes, keeps serving, and returns to its memory and handle baseline', async () => {
    await runFuzz(rig.url, SEED + 1, 0, 300, 16);
    await expectStillServing(rig.url);
    await new Promise((r) => setTimeout(r, 200)); // keep-alive sockets of the warm-up settle
    const heap0 = await heapAfterGc();
    const rss0 = process.memoryUsage.rss();
    const handles0 = handles();
    const versions0 = JSON.stringify(rig.service.registry.list());
    const t0 = performance.now();

    // In slices, with the server's health checked between them.
    const totals = { sent: 0, byStatus: {} as Record<string, number>, byFamily: {} as Record<string, number>, failures: [] as unknown[] };
    const heaps: number[] = [];
    for (let from = 0; from < TOTAL; from += 2000) {
      const out = await runFuzz(rig.url, SEED, from, Math.min(TOTAL, from + 2000), 16);
      totals.sent += out.sent;
      for (const [k, v] of Object.entries(out.byStatus)) totals.byStatus[k] = (totals.byStatus[k] ?? 0) + v;
      for (const [k, v] of Object.entries(out.byFamily)) totals.byFamily[k] = (totals.byFamily[k] ?? 0) + v;
      totals.failures.push(...out.failures);
      await expectStillServing(rig.url);
      heaps.push(await heapAfterGc());
    }
    const seconds = (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 6000)); // idle keep-alive sockets time out (5 s)
    const heap1 = await heapAfterGc();
    const handles1 = handles();
    const mib = (b: number) => (b / 2 ** 20).toFixed(1);
    console.log(
      `[fuzz-10k] ${totals.sent} requests in ${seconds.toFixed(0)} s; statuses ${JSON.stringify(totals.byStatus)}; families ${JSON.stringify(totals.byFamily)}; ` +
        `failures ${totals.failures.length}; heap after GC ${mib(heap0)} → ${heaps.map(mib).join(' → ')} → ${mib(heap1)} MiB; rss ${mib(rss0)} → ${mib(process.memoryUsage.rss())} MiB; active handles ${handles0} → ${handles1}`,
    );
    expect(totals.failures.slice(0, 5)).toEqual([]);
    expect(totals.sent).toBe(TOTAL);
    expect(Object.keys(totals.byStatus).filter((s) => !/^4\d\d$/.test(s))).toEqual([]);
    expect(JSON.stringify(rig.service.registry.list())).toBe(versions0);
    await expectNothingLeft(rig.service);
    // Back to baseline: what 10,000 refused requests leave behind is bounded by a few MiB (compiled caches, pooled buffers).
    expect(heap1 - heap0).toBeLessThan(8 * 2 ** 20);
    expect(handles1).toBeLessThanOrEqual(handles0 + 2);
  });
});
