// A runner whose KV capacity moves (remote replicas joining or leaving): admission follows it.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/engine/cluster.ts';
import { TokenRouterError } from '../../runtime/errors.ts';
import type { ModelRunner, StepOutput, StepRow } from '../../runtime/runner/modelRunner.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { everyN } from './everyN.ts';

class ResizableRunner implements ModelRunner {
  private listeners: ((t: number) => void)[] = [];
  constructor(private readonly inner: SimRunner) {}
  get info() {
    return this.inner.info;
  }
  onCapacityChange(l: (t: number) => void): void {
    this.listeners.push(l);
  }
  resize(tokens: number): void {
    for (const l of this.listeners) l(tokens);
  }
  step(rows: readonly StepRow[]): StepOutput {
    return this.inner.step(rows) as StepOutput;
  }
  release(id: number): void {
    this.inner.release(id);
  }
  fork(source: number, target: number, tokens: number): boolean {
    return this.inner.fork(source, target, tokens);
  }
}

/** Six requests of 3 + 20 = 23 tokens each; the large model's pool starts with room for two. */
function setup() {
  const clock = new VirtualClock();
  const large = new ResizableRunner(new SimRunner({ name: 'large', latency: () => 5 }));
  const cluster = new Cluster({
    clock,
    checkInvariants: true,
    models: [
      { name: 'small', runner: new SimRunner({ name: 'small', latency: () => 1 }) },
      { name: 'large', runner: large, kvCapacityTokens: 2 * 23 },
    ],
  });
  const handles = Array.from({ length: 6 }, (_, i) => cluster.submit({ id: `r${i}`, prompt: [4 + i, 5, 6], maxTokens: 20, algorithm: everyN(2) }));
  return { clock, large, cluster, handles };
}

describe('KV capacity that changes under the engine', () => {
  it('a larger pool admits the requests waiting for room at once', async () => {
    const s = setup();
    s.clock.run({ until: 20 });
    expect(s.cluster.laneStats().find((l) => l.name === 'large')!.waitingAdmission).toBeGreaterThan(0);
    s.large.resize(6 * 23);
    expect(s.cluster.laneStats().find((l) => l.name === 'large')!.waitingAdmission).toBe(0);
    s.clock.run();
    for (const r of await Promise.all(s.handles.map((h) => h.done))) expect(r.status).toBe('done');
  });

  it('a smaller pool fails the waiting requests that can never fit, and the rest finish', async () => {
    const s = setup();
    s.clock.run({ until: 20 });
    const waiting = s.cluster.laneStats().find((l) => l.name === 'large')!.waitingAdmission;
    expect(waiting).toBeGreaterThan(0);
    s.large.resize(20);
    s.clock.run();
    const results = await Promise.all(s.handles.map((h) => h.done));
    const failed = results.filter((r) => r.status === 'failed');
    expect(failed).toHaveLength(waiting);
    for (const f of failed) expect(f.error?.message).toMatch(/model large now holds 20 KV tokens; this request needs 23/);
    expect(results.filter((r) => r.status === 'done')).toHaveLength(6 - waiting);
    for (const l of s.cluster.laneStats()) expect([l.name, l.kvReservedBytes, l.running]).toEqual([l.name, 0, 0]);
  });
});

describe('a request larger than the whole pool', () => {
  it('fails as too_large naming the model and the pool (not as a generic admission error)', async () => {
    const clock = new VirtualClock();
    const cluster = new Cluster({
      clock,
      checkInvariants: true,
      models: [
        { name: 'small', runner: new SimRunner({ name: 'small', latency: () => 1 }) },
        { name: 'large', runner: new SimRunner({ name: 'large', latency: () => 5 }), kvCapacityTokens: 10 },
      ],
    });
    const h = cluster.submit({ id: 'big', prompt: [4, 5, 6], maxTokens: 20, algorithm: everyN(2) });
    clock.run();
    const r = await h.done;
    expect(r.status).toBe('failed');
    expect(r.error).toBeInstanceOf(TokenRouterError);
    expect([(r.error as TokenRouterError).code, (r.error as TokenRouterError).param]).toEqual(['too_large', 'max_tokens']);
    expect(r.error?.message).toBe('large: request big needs 23 KV tokens (prompt + max_tokens), more than the whole KV pool holds (10)');
  });
});
