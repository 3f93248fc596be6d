// The batch panel's prompt tokens from the prefix cache: traced per batch by the engine, kept by the timeline's store, listed among the batch panel's figures.
import { describe, expect, it } from 'vitest';
import { batchFigures } from '../../designer/src/timeline/batchFigures.ts';
import { EventStore } from '../../designer/src/timeline/eventStore.ts';
import { batchEvent } from '../../designer/src/timeline/toEvents.ts';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { singleModelAlgorithm } from '../../runtime/registry/builtins.ts';
import type { TraceEvent, TraceEventOf } from '../../shared/trace.ts';
import { runWorkload } from '../core/runWorkload.ts';

describe('cached prompt tokens in the timeline', () => {
  it('every batch says how many prompt tokens its rows took from the prefix cache, and the panel lists it', () => {
    const events: TraceEvent[] = [];
    const clock = new VirtualClock();
    const cluster = new Cluster({
      clock,
      prefixCache: true,
      maxConcurrency: 1,
      trace: { emit: (e) => events.push(e) },
      models: [{ name: 'm', runner: new SimRunner({ name: 'm', latency: () => 1 }) }],
    });
    const preamble = Array.from({ length: 40 }, (_, i) => 4 + (i % 30));
    runWorkload(
      cluster,
      clock,
      singleModelAlgorithm('m'),
      [0, 1, 2].map((i) => ({ id: `r${i}`, prompt: [...preamble, 50 + i], maxTokens: 4 })),
    );
    const batches = events.filter((e): e is TraceEventOf<'batch'> => e.type === 'batch');
    const cached = batches.reduce((a, b) => a + (b.cachedTokens ?? 0), 0);
    // r1 and r2 each start from the 40-token preamble r0 left behind
    expect(cached).toBe(cluster.inProcessEngines[0].stats.prefixHits);
    expect(cached).toBeGreaterThanOrEqual(80);
    const store = new EventStore();
    store.addMany(events);
    const hit = batches.findIndex((b) => (b.cachedTokens ?? 0) > 0);
    expect(batchEvent(store, store.batches.phys(hit))).toMatchObject({ batchId: batches[hit].batchId, cachedTokens: batches[hit].cachedTokens });
    expect(batchFigures(store, store.batches.phys(hit), 0)).toContainEqual(['prompt tokens from cache', String(batches[hit].cachedTokens)]);
  });
});
