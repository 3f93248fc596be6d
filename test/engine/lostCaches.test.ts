// A runner that loses some caches and goes on (one of a remote model's replicas died): only their requests fail.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/engine/cluster.ts';
import type { RequestResult } from '../../runtime/engine/requestState.ts';
import type { ModelRunner, StepOutput, StepRow } from '../../runtime/runner/modelRunner.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { everyN } from './everyN.ts';

/**
 * A simulated large model whose "replica" holding the caches of `doomed` requests dies at step
 * `dieAt`: rows of those requests in that step come back lost, and its other doomed caches are
 * reported through onCachesLost. Later steps naming a lost cache report it lost again.
 */
class DyingReplicaRunner implements ModelRunner {
  private steps = 0;
  private readonly lostIds = new Set<number>();
  private readonly listeners: ((ids: readonly number[], e: Error) => void)[] = [];
  lostInStep = 0;
  lostIdle = 0;
  readonly known = new Map<string, number>();
  constructor(
    private readonly inner: SimRunner,
    private readonly doomed: ReadonlySet<string>,
    private readonly dieAt: number,
  ) {}
  get info() {
    return this.inner.info;
  }
  onCachesLost(l: (ids: readonly number[], e: Error) => void): void {
    this.listeners.push(l);
  }
  step(rows: readonly StepRow[]): StepOutput {
    this.steps++;
    const error = new Error('replica r1 is gone');
    for (const r of rows) this.known.set(r.requestId, r.cacheId);
    const dying = this.steps === this.dieAt;
    const lost: number[] = [];
    const live: StepRow[] = [];
    rows.forEach((r, i) => {
      if (this.lostIds.has(r.cacheId) || (dying && this.doomed.has(r.requestId))) lost.push(i);
      else live.push(r);
    });
    const out = this.inner.step(live) as StepOutput;
    const all: StepOutput['rows'] = [];
    let k = 0;
    rows.forEach((_, i) => (all[i] = lost.includes(i) ? (undefined as never) : out.rows[k++]));
    if (dying) {
      for (const i of lost) this.lostIds.add(rows[i].cacheId);
      const idle = [...this.doomed].map((id) => this.known.get(id)).filter((c): c is number => c !== undefined && !rows.some((r) => r.cacheId === c));
      for (const c of idle) this.lostIds.add(c);
      this.lostInStep = lost.length;
      this.lostIdle = idle.length;
      // reported after this step's answer, as a heartbeat timeout would be
      setTimeout(() => this.listeners.forEach((l) => l(idle, error)), 0);
    }
    return { rows: all, durationMs: out.durationMs, ...(lost.length ? { lost: { rows: lost, error } } : {}) };
  }
  release(cacheId: number): void {
    if (!this.lostIds.delete(cacheId)) this.inner.release(cacheId);
  }
  fork(source: number, target: number, tokens: number): boolean {
    return this.inner.fork(source, target, tokens);
  }
}

async function run(doomed: Set<string>, dieAt: number) {
  const clock = new VirtualClock();
  const large = new DyingReplicaRunner(new SimRunner({ name: 'large', latency: () => 5 }), doomed, dieAt);
  const cluster = new Cluster({
    clock,
    checkInvariants: true,
    maxConcurrency: 8,
    models: [
      { name: 'small', runner: new SimRunner({ name: 'small', latency: () => 1 }) },
      { name: 'large', runner: large },
    ],
  });
  const handles = Array.from({ length: 8 }, (_, i) => cluster.submit({ id: `r${i}`, prompt: [5 + i, 6, 7], maxTokens: 30, algorithm: everyN(2) }));
  // the idle caches are reported from a real-time timer: let it fire between virtual runs
  for (let k = 0; k < 50 && clock.pending > 0; k++) {
    clock.run();
    await new Promise((r) => setTimeout(r, 1));
  }
  clock.run();
  const results = await Promise.all(handles.map((h) => h.done));
  return { results, cluster, large };
}

describe('a runner that loses some caches and goes on', () => {
  it('fails exactly the requests whose caches were lost, in the step or idle; the others equal a run without loss', async () => {
    const clean = await run(new Set(), Infinity);
    const doomed = new Set(['r0', 'r4', 'r6']);
    const hit = await run(doomed, 4);
    const byId = (rs: RequestResult[]) => new Map(rs.map((r) => [r.id, r]));
    const want = byId(clean.results);
    for (const r of hit.results) {
      if (doomed.has(r.id)) {
        expect(r.status, r.id).toBe('failed');
        expect(r.error?.message).toMatch(/model large cannot go on with this request: replica r1 is gone/);
      } else {
        expect(r.status, r.id).toBe('done');
        expect(r.tokens).toEqual(want.get(r.id)!.tokens);
      }
    }
    // nothing leaked: every lane's KV and reservations are back to zero
    for (const l of hit.cluster.laneStats()) expect([l.name, l.kvBytes, l.kvReservedBytes, l.running, l.pendingReturn]).toEqual([l.name, 0, 0, 0, 0]);
    expect(hit.cluster.lane('large')?.down).toBe(false);
    // both paths were taken: rows of the dying step, and caches idle at that moment
    expect(hit.large.lostInStep).toBeGreaterThan(0);
    expect(hit.large.lostIdle).toBeGreaterThan(0);
  });
});
