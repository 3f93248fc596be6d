// A request whose KV cannot be placed now waits (and past limits.maxQueue the entry answers 429); one that can never fit is refused at once, naming max_tokens.
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import type { RequestResult } from '../../runtime/entry/requestState.ts';
import { TokenRouterError } from '../../runtime/errors.ts';
import { singleModelAlgorithm } from '../../runtime/registry/builtins.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';

function cluster(clock: VirtualClock) {
  const runner = new SimRunner({ name: 'small', vocabSize: 64, latency: (b, t) => 2 + b * 0.1 + t * 0.01 });
  // room for one request of 30 KV tokens at a time
  return new Cluster({
    clock,
    mode: 'async-immediate',
    checkInvariants: true,
    maxConcurrency: 3,
    maxQueue: 1,
    models: [{ name: 'small', runner, maxStepTokens: 8, kvCapacityTokens: 40 }],
  });
}

describe('KV admission under a bounded pool', () => {
  const algorithm = singleModelAlgorithm('small');
  const prompt = Array.from({ length: 10 }, (_, i) => 5 + i);

  it('queues what cannot be placed, runs it later, and answers overloaded past maxQueue', () => {
    const clock = new VirtualClock();
    const c = cluster(clock);
    const results = new Map<string, RequestResult>();
    for (let i = 0; i < 4; i++) c.submit({ id: `r${i}`, prompt, maxTokens: 20, algorithm, onEnd: (r) => results.set(r.id, r) });
    // one holds the pool, two wait for KV on the engine, one waits at the entry
    const lane = c.laneStats()[0];
    expect(lane.running).toBe(1);
    expect(lane.waitingAdmission).toBe(2);
    let refused: unknown;
    try {
      c.submit({ id: 'r4', prompt, maxTokens: 20, algorithm });
    } catch (e) {
      refused = e;
    }
    expect(refused).toBeInstanceOf(TokenRouterError);
    expect((refused as TokenRouterError).code).toBe('overloaded');
    clock.run({ stop: () => results.size === 4 });
    expect([...results.values()].map((r) => [r.status, r.tokens.length])).toEqual([0, 1, 2, 3].map(() => ['done', 20]));
    expect(c.laneStats()[0].admissions).toBe(4);
  });

  it('refuses a request that could never fit, naming max_tokens and the pool', () => {
    const c = cluster(new VirtualClock());
    let refused: unknown;
    try {
      c.submit({ id: 'big', prompt, maxTokens: 31, algorithm });
    } catch (e) {
      refused = e;
    }
    expect(refused).toBeInstanceOf(TokenRouterError);
    const e = refused as TokenRouterError;
    expect([e.code, e.param]).toEqual(['too_large', 'max_tokens']);
    expect(e.message).toMatch(/needs 41 KV tokens .* holds \(40 tokens/);
    // nothing was taken: a request that fits is served
    expect(c.laneStats()[0].admissions).toBe(0);
  });
});
