// Actor behaviour under a virtual clock with the scripted runner: retention, deadlines, cancellation, barriers.
import { describe, expect, it } from 'vitest';
import { standardSend, type Algorithm } from '../../shared/algorithm.ts';
import type { TraceEventOf } from '../../shared/trace.ts';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster, type ClusterOptions } from '../../runtime/entry/cluster.ts';
import { TokenRouterError } from '../../runtime/errors.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { TraceRecorder } from '../../runtime/trace/traceRecorder.ts';
import type { SchedulingMode } from '../../runtime/core/servingPolicy.ts';
import { everyN } from './everyN.ts';

function setup(opts: Partial<ClusterOptions> & { latency?: [number, number]; kv?: number } = {}) {
  const clock = new VirtualClock();
  const trace = new TraceRecorder();
  const [ls, ll] = opts.latency ?? [1, 5];
  const small = new SimRunner({ name: 'small', latency: () => ls });
  const large = new SimRunner({ name: 'large', latency: () => ll });
  const cluster = new Cluster({
    clock,
    trace,
    maxConcurrency: 8,
    ...opts,
    models: opts.models ?? [
      { name: 'small', runner: small, kvCapacityTokens: opts.kv },
      { name: 'large', runner: large, kvCapacityTokens: opts.kv },
    ],
  });
  return { clock, trace, small, large, cluster };
}

function expectClean(cluster: Cluster, runners: SimRunner[]) {
  expect(cluster.idle).toBe(true);
  for (const l of cluster.laneStats()) {
    expect(l.kvBytes, l.name).toBe(0);
    expect(l.kvReservedBytes, l.name).toBe(0);
    expect(l.ready + l.waitingAdmission + l.pendingReturn + l.running, l.name).toBe(0);
  }
  for (const r of runners) expect(r.liveCaches, r.info.name).toBe(0);
}

describe('pending-return retention', () => {
  const prompt = [5, 6, 7, 8];
  const maxTokens = 20;

  it('retain mode admits once per sub-server visited and feeds only unseen suffixes', async () => {
    const { clock, cluster, small, large } = setup({ retainState: true });
    const h = cluster.submit({ prompt, maxTokens, algorithm: everyN(3) });
    clock.run();
    const r = await h.done;
    expect(r.status).toBe('done');
    expect(r.tokens).toHaveLength(maxTokens);
    expect(r.handoffs).toBeGreaterThanOrEqual(8);
    expect(r.admissions).toEqual({ small: 1, large: 1 });
    // Each model is fed every committed token exactly once (plus nothing twice): no re-prefill.
    const finalLen = prompt.length + maxTokens;
    expect(r.tokensFed.small).toBeLessThanOrEqual(finalLen);
    expect(r.tokensFed.large).toBeLessThanOrEqual(finalLen);
    expect(small.counts.prefillRows).toBe(1);
    expect(large.counts.prefillRows).toBe(1);
    expect(large.counts.extendRows).toBeGreaterThan(0);
    expectClean(cluster, [small, large]);
  });

  it('retainState: false admits once per visit and re-prefills the whole context each time', async () => {
    const { clock, cluster, small, large } = setup({ retainState: false });
    const h = cluster.submit({ prompt, maxTokens, algorithm: everyN(3) });
    clock.run();
    const r = await h.done;
    expect(r.status).toBe('done');
    const visitsLarge = r.handoffs / 2;
    expect(r.admissions.large).toBe(Math.ceil(visitsLarge));
    expect(r.admissions.small).toBe(1 + Math.floor(visitsLarge));
    expect(small.counts.prefillRows).toBe(r.admissions.small);
    expect(large.counts.prefillRows).toBe(r.admissions.large);
    expect(large.counts.extendRows).toBe(0);
    // Re-prefill makes each model eat far more tokens than the sequence holds.
    expect(r.tokensFed.large).toBeGreaterThan(2 * (prompt.length + maxTokens));
    expectClean(cluster, [small, large]);
  });

  it('both modes commit the same tokens', async () => {
    const outs = [];
    for (const retainState of [true, false]) {
      const { clock, cluster } = setup({ retainState });
      const h = cluster.submit({ prompt, maxTokens, algorithm: everyN(4) });
      clock.run();
      outs.push((await h.done).tokens);
    }
    expect(outs[0]).toEqual(outs[1]);
  });

  it('a pending-return request keeps its local state while away', () => {
    const { clock, cluster, trace } = setup({ latency: [1, 50] });
    cluster.submit({ id: 'a', prompt, maxTokens, algorithm: everyN(2) });
    clock.run({ until: 30 });
    const states = trace.events.filter((e): e is TraceEventOf<'request-state'> => e.type === 'request-state' && e.model === 'small').map((e) => e.state);
    expect(states).toEqual(['queued', 'running', 'pending-return']);
    expect(cluster.laneStats()[0].pendingReturn).toBe(1);
    expect(cluster.laneStats()[0].kvBytes).toBeGreaterThan(0);
  });
});

describe('delayed batching', () => {
  it('the max-wait deadline launches a batch below threshold', () => {
    const { clock, cluster, trace } = setup({ mode: 'async-delayed', maxWaitMs: 40, maxConcurrency: 4, latency: [2, 5] });
    cluster.setThresholds({ large: 3 });
    cluster.submit({ prompt: [1, 2], maxTokens: 6, algorithm: everyN(2) });
    clock.run();
    const batches = trace.events.filter((e): e is TraceEventOf<'batch'> => e.type === 'batch');
    const handoffs = trace.events.filter((e): e is TraceEventOf<'handoff'> => e.type === 'handoff' && e.to === 'large');
    const largeBatches = batches.filter((b) => b.model === 'large');
    expect(largeBatches.length).toBeGreaterThan(0);
    // Alone, the request can never reach threshold 3: each large batch starts exactly maxWait after arrival.
    for (const b of largeBatches) {
      const arrival = Math.max(...handoffs.filter((h) => h.t <= b.start).map((h) => h.t));
      expect(b.start - arrival).toBeCloseTo(40, 6);
    }
  });

  it('a batch launches at once when the threshold is reached', () => {
    const { clock, cluster, trace } = setup({ mode: 'async-delayed', maxWaitMs: 1000, maxConcurrency: 4, latency: [2, 5] });
    cluster.setThresholds({ large: 2 });
    const alg = everyN(1);
    cluster.submit({ prompt: [1], maxTokens: 2, algorithm: alg });
    cluster.submit({ prompt: [2], maxTokens: 2, algorithm: alg });
    clock.run();
    const first = trace.events.find((e): e is TraceEventOf<'batch'> => e.type === 'batch' && e.model === 'large')!;
    const arrivals = trace.events.filter((e): e is TraceEventOf<'handoff'> => e.type === 'handoff' && e.to === 'large').map((h) => h.t);
    // The first submit launched alone on small, so the two arrive at large at different times;
    // large waits for the second (not for the 1000 ms deadline) and takes both in one batch.
    expect(arrivals[0]).toBeLessThan(arrivals[1]);
    expect(first.requestIds).toHaveLength(2);
    expect(first.start).toBe(arrivals[1]);
  });

  it('refuses infeasible thresholds with a clear error', () => {
    const { cluster } = setup({ mode: 'async-delayed', maxConcurrency: 4 });
    expect(() => cluster.setThresholds({ small: 2, large: 4 })).toThrow(/Σ\(T_i − 1\) = 4 must be < 4/);
    expect(() => cluster.setThresholds({ large: 0 })).toThrow(TokenRouterError);
    expect(() => setup({ mode: 'async-delayed', maxConcurrency: 2, models: undefined }).cluster.setThresholds({ large: 3 })).toThrow(/infeasible/);
    // A feasible setting is accepted.
    cluster.setThresholds({ small: 2, large: 2 });
    expect(cluster.laneStats().map((l) => l.threshold)).toEqual([2, 2]);
  });

  it('thresholds above 1 need a finite deadline', () => {
    expect(() => setup({ mode: 'async-delayed', maxWaitMs: Infinity }).cluster.setThresholds({ large: 2 })).toThrow(/max-wait/);
  });
});

describe('cancellation frees everything from any state', () => {
  const alg = everyN(2);
  const cases: { name: string; at: number; kv?: number }[] = [
    { name: 'queued at the entry', at: 0 },
    { name: 'waiting for KV admission', at: 0, kv: 40 },
    { name: 'inside a running batch', at: 0.5 },
    { name: 'pending-return at a peer', at: 3 },
    { name: 'mid-decode after several handoffs', at: 40 },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const { clock, cluster, small, large } = setup({ maxConcurrency: c.name.startsWith('queued') ? 1 : 8, kv: c.kv, latency: [1, 5] });
      const others = [0, 1].map((i) => cluster.submit({ id: `o${i}`, prompt: [1, 2, 3], maxTokens: 15, algorithm: alg }));
      const victim = cluster.submit({ id: 'v', prompt: [9, 9, 9], maxTokens: 30, algorithm: alg });
      clock.run({ until: c.at });
      expect(cluster.cancel('v')).toBe(true);
      clock.run();
      const r = await victim.done;
      expect(r.status).toBe('cancelled');
      for (const o of others) expect((await o.done).status).toBe('done');
      expectClean(cluster, [small, large]);
    });
  }
});

describe('sync barriers', () => {
  function batchesFor(mode: SchedulingMode) {
    const { clock, cluster, trace } = setup({ mode, latency: [1, 3] });
    for (let i = 0; i < 6; i++) cluster.submit({ prompt: [i + 1], maxTokens: 12, algorithm: everyN(2) });
    clock.run();
    expect(cluster.idle).toBe(true);
    return trace.events.filter((e): e is TraceEventOf<'batch'> => e.type === 'batch');
  }

  it('model-sync never runs two models at once', () => {
    const bs = batchesFor('model-sync');
    expect(new Set(bs.map((b) => b.model)).size).toBe(2);
    const sorted = [...bs].sort((a, b) => a.start - b.start);
    for (let i = 1; i < sorted.length; i++) expect(sorted[i].start).toBeGreaterThanOrEqual(sorted[i - 1].end);
  });

  it('step-sync starts every step of a round together and waits for the slowest', () => {
    const bs = batchesFor('step-sync');
    const starts = [...new Set(bs.map((b) => b.start))].sort((a, b) => a - b);
    let overlapped = 0;
    for (const t of starts) {
      const round = bs.filter((b) => b.start === t);
      const end = Math.max(...round.map((b) => b.end));
      // No batch of any model starts inside a round.
      expect(bs.some((b) => b.start > t && b.start < end)).toBe(false);
      if (round.length > 1) overlapped++;
    }
    expect(overlapped).toBeGreaterThan(0);
  });

  it('async-immediate lets models overlap', () => {
    const bs = batchesFor('async-immediate');
    const overlaps = bs.filter((a) => bs.some((b) => b.model !== a.model && b.start > a.start && b.start < a.end));
    expect(overlaps.length).toBeGreaterThan(0);
  });
});

describe('failures stay local', () => {
  it('an exception in route fails that request only', async () => {
    const { clock, cluster, small, large } = setup();
    const bad: Algorithm<null> = {
      ...everyN(2),
      name: 'bad',
      route: (r) => {
        if (r.position > 6) throw new Error('boom');
        return 0;
      },
    };
    const b = cluster.submit({ prompt: [1, 2, 3], maxTokens: 10, algorithm: bad });
    const g = cluster.submit({ prompt: [1, 2, 3], maxTokens: 10, algorithm: everyN(2) });
    clock.run();
    const rb = await b.done;
    expect(rb.status).toBe('failed');
    expect(rb.error?.message).toMatch(/bad\.route: boom/);
    expect((await g.done).status).toBe('done');
    expectClean(cluster, [small, large]);
  });

  it('a route returning an unknown model fails with a clear message', async () => {
    const { clock, cluster } = setup();
    const h = cluster.submit({ prompt: [1], maxTokens: 5, algorithm: { ...everyN(2), route: () => 7 } });
    clock.run();
    expect((await h.done).error?.message).toMatch(/returned 7; expected 0 or a model id in 1..2/);
  });

  it('a send that drops unseen tokens is refused', async () => {
    const { clock, cluster } = setup();
    const h = cluster.submit({ prompt: [1, 2], maxTokens: 5, algorithm: { ...everyN(1), send: (req) => ({ ...standardSend(req, false), tokens: [] }) } });
    clock.run();
    expect((await h.done).error?.message).toMatch(/must carry the 2 unseen tokens/);
  });

  it('a failing runner step fails its batch and the cluster keeps serving', async () => {
    const { clock, cluster, small, large } = setup();
    // admitted while up, so its first handoff meets the engine taken down (a new request would be refused)
    const h = cluster.submit({ prompt: [1, 2], maxTokens: 8, algorithm: everyN(2) });
    cluster.setDown('large', true);
    expect(() => cluster.submit({ prompt: [1, 2], maxTokens: 8, algorithm: everyN(2) })).toThrow(/model large is down; retry shortly/);
    clock.run();
    expect((await h.done).error?.message).toMatch(/large step failed/);
    cluster.setDown('large', false);
    const h2 = cluster.submit({ prompt: [1, 2], maxTokens: 8, algorithm: everyN(2) });
    clock.run();
    expect((await h2.done).status).toBe('done');
    expectClean(cluster, [small, large]);
  });
});

describe('a sub-server whose runner dies', () => {
  it('fails the requests that hold state there, keeps the rest, and resumes on a new runner', async () => {
    const clock = new VirtualClock();
    const small = new SimRunner({ name: 'small', latency: () => 1 });
    const large = new SimRunner({ name: 'large', latency: () => 3 });
    const medium = new SimRunner({ name: 'medium', latency: () => 2 });
    const cluster = new Cluster({
      clock,
      checkInvariants: true,
      models: [
        { name: 'small', runner: small },
        { name: 'large', runner: large },
        { name: 'medium', runner: medium },
      ],
    });
    const onSmallMedium: Algorithm<null> = { ...everyN(2), name: 'sm', models: ['small', 'medium'] };
    const touching = [0, 1, 2].map((i) => cluster.submit({ prompt: [i + 1], maxTokens: 40, algorithm: everyN(2) }));
    const apart = [0, 1].map((i) => cluster.submit({ prompt: [i + 1], maxTokens: 40, algorithm: onSmallMedium }));
    clock.run({ until: 10 });
    expect(cluster.failLane('large', new Error('worker exited'))).toBe(3);
    const fresh = new SimRunner({ name: 'large', latency: () => 3 });
    cluster.replaceRunner('large', fresh);
    clock.run();
    for (const h of touching) {
      const r = await h.done;
      expect(r.status).toBe('failed');
      expect(r.error?.message).toMatch(/model large failed: worker exited/);
    }
    for (const h of apart) expect((await h.done).status).toBe('done');
    const after = cluster.submit({ prompt: [7], maxTokens: 10, algorithm: everyN(2) });
    clock.run();
    expect((await after.done).status).toBe('done');
    expect(fresh.counts.steps).toBeGreaterThan(0);
    expectClean(cluster, [small, medium, fresh]);
  });
});
