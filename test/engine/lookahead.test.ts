// Lookahead through the engine: cancelled mid-stream, cut short by new work, within max_tokens and min_tokens, off in sync modes.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/engine/cluster.ts';
import type { RequestResult } from '../../runtime/engine/requestState.ts';
import { runOracle } from '../../runtime/oracle/sequentialOracle.ts';
import type { ModelRunner, StepOutput, StepRow } from '../../runtime/runner/modelRunner.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import type { SchedulingMode } from '../../runtime/scheduler/schedulingMode.ts';
import { markovAlgorithm, r2rMarkov } from '../../runtime/sim/markovAlgorithm.ts';

const prompt = (i: number) => Array.from({ length: 4 + (i % 3) }, (_, j) => 5 + ((i * 7 + j) % 40));

function runners(clock: VirtualClock | undefined, eos = -1) {
  return {
    small: new SimRunner({ name: 'small', vocabSize: 50, eosTokenId: eos, maxAhead: 8, streamOn: clock, latency: (b) => 1 + 0.1 * b }),
    large: new SimRunner({ name: 'large', vocabSize: 50, eosTokenId: eos, latency: (b) => 5 + 0.5 * b }),
  };
}

/** Records every row a runner is asked to step. */
class Spy implements ModelRunner {
  readonly rows: StepRow[] = [];
  constructor(readonly inner: SimRunner) {}
  get info() {
    return this.inner.info;
  }
  get maxAhead() {
    return this.inner.maxAhead;
  }
  step(rows: readonly StepRow[]): StepOutput {
    this.rows.push(...rows);
    return this.inner.step(rows);
  }
  release(id: number): void {
    this.inner.release(id);
  }
  fork(source: number, target: number, tokens: number): boolean {
    return this.inner.fork(source, target, tokens);
  }
  yieldAhead(): void {
    this.inner.yieldAhead();
  }
}

function cluster(clock: VirtualClock, r: ReturnType<typeof runners>, mode: SchedulingMode = 'async-immediate', small: ModelRunner = r.small) {
  return new Cluster({ clock, mode, lookahead: 8, maxConcurrency: 8, checkInvariants: true, models: [{ name: 'small', runner: small }, { name: 'large', runner: r.large }] });
}

async function expectOracle(alg: ReturnType<typeof markovAlgorithm>, got: RequestResult, req: { id: string; prompt: number[]; maxTokens: number; minTokens?: number }, eos = -1) {
  const fresh = runners(undefined, eos);
  const want = await runOracle(alg, { small: fresh.small, large: fresh.large }, req);
  expect(got.tokens, req.id).toEqual(want.tokens);
  expect(got.producedBy, req.id).toEqual(want.producedBy);
}

/** A small/large R2R-like cluster on a virtual clock with `n` requests submitted. */
function serve(p: number, n: number, maxTokens: number) {
  const clock = new VirtualClock();
  const r = runners(clock);
  const c = cluster(clock, r);
  const alg = markovAlgorithm(r2rMarkov(p));
  const reqs = Array.from({ length: n }, (_, i) => ({ id: `q${i}`, prompt: prompt(i), maxTokens }));
  const handles = reqs.map((q) => c.submit({ ...q, algorithm: alg }));
  return { clock, r, c, alg, reqs, handles };
}

describe('lookahead in the engine', () => {
  it('a request cancelled while its lookahead streams frees its cache once; the others stay exact', async () => {
    const { clock, r, c, alg, reqs, handles } = serve(0.05, 4, 60);
    // run until a streamed batch on the small model has a row waiting for its next lookahead result
    const waiting = () => c.lanes[0].inFlight.find((b) => b.streaming && b.live.some((i) => b.locals[i].inReady));
    clock.run({ stop: () => waiting() !== undefined });
    const batch = waiting();
    expect(batch).toBeDefined();
    const victim = batch!.locals[batch!.live.find((i) => batch!.locals[i].inReady)!].id;
    const releases0 = r.small.counts.releases;
    handles.find((h) => h.id === victim)!.cancel();
    expect(r.small.counts.releases - releases0).toBe(1);
    clock.run({ stop: () => c.idle });
    const results = await Promise.all(handles.map((h) => h.done));
    for (const [i, res] of results.entries()) {
      if (res.id === victim) expect(res.status).toBe('cancelled');
      else {
        expect(res.status).toBe('done');
        await expectOracle(alg, res, reqs[i]);
      }
    }
    expect(c.lanes[0].stats.aheadRows).toBeGreaterThan(0);
    expect(r.small.liveCaches).toBe(0);
    for (const l of c.laneStats()) expect(l.kvBytes).toBe(0);
  });

  it('new work for the model cuts a streamed lookahead short, and the results stay exact', async () => {
    const { clock, r, c, alg, reqs, handles } = serve(0.15, 8, 80);
    clock.run({ stop: () => c.idle });
    const results = await Promise.all(handles.map((h) => h.done));
    for (const [i, res] of results.entries()) await expectOracle(alg, res, reqs[i]);
    expect(c.lanes[0].stats.aheadYields).toBeGreaterThan(0);
    expect(r.small.counts.yields).toBeGreaterThan(0);
    expect(r.small.counts.rollbacks).toBeGreaterThan(0);
  });

  it('never looks past max_tokens, nor across the min_tokens boundary where EOS suppression ends', async () => {
    const clock = new VirtualClock();
    const r = runners(clock, 3);
    const spy = new Spy(r.small);
    const c = cluster(clock, r, 'async-immediate', spy);
    const alg = markovAlgorithm(r2rMarkov(0.02));
    const reqs = Array.from({ length: 6 }, (_, i) => ({ id: `m${i}`, prompt: prompt(i), maxTokens: 12 + i * 3, minTokens: 5 + i }));
    const handles = reqs.map((q) => c.submit({ ...q, algorithm: alg }));
    clock.run({ stop: () => c.idle });
    const results = await Promise.all(handles.map((h) => h.done));
    for (const [i, res] of results.entries()) await expectOracle(alg, res, reqs[i], 3);
    const byId = new Map(reqs.map((q) => [q.id, q]));
    let asked = 0;
    for (const row of spy.rows) {
      const ahead = row.ahead ?? 0;
      if (ahead === 0) continue;
      asked++;
      const q = byId.get(row.requestId)!;
      const sampledAt = row.position + row.tokens.length; // sequence index of the token this row samples
      // every lookahead step samples one more; the last may sample position prompt + maxTokens - 1
      expect(sampledAt + ahead).toBeLessThanOrEqual(q.prompt.length + q.maxTokens - 1);
      const generated = sampledAt - q.prompt.length;
      if (generated < q.minTokens) expect(generated + ahead).toBeLessThan(q.minTokens);
      expect(row.sampling.suppressEos === true).toBe(generated < q.minTokens);
    }
    expect(asked).toBeGreaterThan(0);
  });

  it('sync modes never ask for lookahead', () => {
    for (const mode of ['step-sync', 'model-sync'] as const) {
      const clock = new VirtualClock();
      const r = runners(clock);
      const spy = new Spy(r.small);
      const c = cluster(clock, r, mode, spy);
      const alg = markovAlgorithm(r2rMarkov(0.05));
      for (let i = 0; i < 4; i++) c.submit({ id: `s${i}`, prompt: prompt(i), maxTokens: 30, algorithm: alg });
      clock.run({ stop: () => c.idle });
      expect(spy.rows.length).toBeGreaterThan(0);
      expect(spy.rows.every((row) => (row.ahead ?? 0) === 0)).toBe(true);
      expect(c.lanes[0].stats.aheadRows).toBe(0);
    }
  });
});
