// A runner that takes two steps in flight (a sub-server across a network): same tokens, disjoint batches, no idle round trips.
import { describe, expect, it } from 'vitest';
import type { TraceEventOf } from '../../shared/trace.ts';
import { batchEvent } from './batchEvent.ts';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/engine/cluster.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { RemoteSim } from '../../runtime/sim/remoteSim.ts';
import type { SchedulingMode } from '../../runtime/scheduler/schedulingMode.ts';
import { TraceRecorder } from '../../runtime/trace/traceRecorder.ts';
import { everyN } from './everyN.ts';

async function serve(depth: number, mode: SchedulingMode) {
  const clock = new VirtualClock();
  const trace = new TraceRecorder();
  const small = new SimRunner({ name: 'small', latency: () => 2 });
  const largeInner = new SimRunner({ name: 'large', latency: () => 20 });
  const large = new RemoteSim(largeInner, clock, 3, 3, depth);
  const cluster = new Cluster({
    clock,
    trace,
    mode,
    maxConcurrency: 8,
    checkInvariants: true,
    models: [
      { name: 'small', runner: small },
      { name: 'large', runner: large },
    ],
  });
  const handles = Array.from({ length: 16 }, (_, i) => cluster.submit({ id: `r${i}`, prompt: [5 + (i % 7), 6, 7 + i], maxTokens: 40, algorithm: everyN(3) }));
  clock.run();
  const results = await Promise.all(handles.map((h) => h.done));
  const batches = trace.events.filter((e): e is TraceEventOf<'batch'> => e.type === 'batch' && e.model === 'large');
  return { clock, cluster, results, batches, large, small, largeInner, end: clock.now() };
}

/** Pairs of large-model batches whose [start, end) overlap, and whether any overlapping pair shares a request. */
function overlaps(batches: readonly TraceEventOf<'batch'>[]) {
  let pairs = 0;
  let shared = 0;
  for (let i = 0; i < batches.length; i++) {
    for (let j = i + 1; j < batches.length; j++) {
      const a = batches[i];
      const b = batches[j];
      if (a.start < b.end && b.start < a.end) {
        pairs++;
        if (a.requestIds.some((id) => b.requestIds.includes(id))) shared++;
      }
    }
  }
  return { pairs, shared };
}

describe('pipelined runner (two steps in flight)', () => {
  it('commits exactly the tokens of the one-at-a-time run, never puts a request in two batches, and does not idle for round trips', async () => {
    const one = await serve(1, 'async-immediate');
    const two = await serve(2, 'async-immediate');
    for (const r of [...one.results, ...two.results]) expect(r.status).toBe('done');
    expect(two.results.map((r) => r.tokens)).toEqual(one.results.map((r) => r.tokens));
    expect(one.large.maxInFlight).toBe(1);
    expect(two.large.maxInFlight).toBe(2);
    expect(overlaps(one.batches).pairs).toBe(0);
    const o = overlaps(two.batches);
    expect(o.pairs).toBeGreaterThan(0);
    expect(o.shared).toBe(0);
    // One at a time, every large step also pays the 6 ms round trip; pipelined, the next step is waiting.
    expect(two.end).toBeLessThan(one.end * 0.9);
    for (const s of [one, two]) {
      expect(s.cluster.idle).toBe(true);
      for (const l of s.cluster.laneStats()) expect([l.name, l.kvBytes, l.kvReservedBytes, l.running, l.pendingReturn]).toEqual([l.name, 0, 0, 0, 0]);
      expect(s.small.liveCaches + s.largeInner.liveCaches).toBe(0);
    }
  });

  it('under a barrier (step-sync, model-sync) a lane keeps one batch at a time whatever the runner accepts', async () => {
    for (const mode of ['step-sync', 'model-sync'] as const) {
      const s = await serve(2, mode);
      for (const r of s.results) expect(r.status).toBe('done');
      expect(s.large.maxInFlight, mode).toBe(1);
      expect(overlaps(s.batches).pairs, mode).toBe(0);
    }
  });

  it('async-delayed: a second batch starts only when the threshold is reached again', async () => {
    const clock = new VirtualClock();
    const trace = new TraceRecorder();
    const large = new RemoteSim(new SimRunner({ name: 'large', latency: () => 20 }), clock, 3, 3, 2);
    const cluster = new Cluster({
      clock,
      trace,
      mode: 'async-delayed',
      maxWaitMs: 1000,
      maxConcurrency: 8,
      checkInvariants: true,
      models: [
        { name: 'small', runner: new SimRunner({ name: 'small', latency: () => 2 }), threshold: 1 },
        { name: 'large', runner: large, threshold: 3 },
      ],
    });
    const hs = Array.from({ length: 8 }, (_, i) => cluster.submit({ id: `r${i}`, prompt: [4 + i, 5], maxTokens: 30, algorithm: everyN(2 + (i % 3)) }));
    clock.run();
    for (const r of await Promise.all(hs.map((h) => h.done))) expect(r.status).toBe('done');
    const batches = trace.events.filter((e): e is TraceEventOf<'batch'> => e.type === 'batch' && e.model === 'large');
    expect(overlaps(batches).pairs).toBeGreaterThan(0);
    // Apart from the tail (fewer than 3 requests left alive), no batch launched below threshold.
    const early = batches.filter((b) => b.end < clock.now() - 200);
    expect(early.length).toBeGreaterThan(5);
    for (const b of early) expect(b.requestIds.length).toBeGreaterThanOrEqual(3);
  });
});

describe('live routing estimate with a pipelined model', () => {
  it('times a batch that waited behind the one ahead from that one’s end, not from its launch', async () => {
    const { RoutingEstimator } = await import('../../runtime/scheduler/routingEstimator.ts');
    const est = new RoutingEstimator(['small', 'large'], 10_000, 4);
    // Large runs 20 ms steps back to back; each next batch was sent 10 ms before the previous ended.
    for (let k = 0; k < 60; k++) {
      est.onEvent(batchEvent('large', 2, Math.max(0, k * 20 - 10), (k + 1) * 20));
      est.onEvent(batchEvent('small', 2, k * 20, k * 20 + 5));
    }
    const e = est.estimate(2000, 10);
    expect(e).not.toBeNull();
    expect(e!.latency[1][1]).toBeCloseTo(20, 6);
    expect(e!.latency[0][1]).toBeCloseTo(5, 6);
  });
});
