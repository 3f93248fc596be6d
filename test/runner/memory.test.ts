// KV accounting, memory pressure and eviction on the real bundled models, through the cluster.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rStitch } from '../../examples/algorithms/rStitch.ts';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import type { RequestResult } from '../../runtime/entry/requestState.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { planMemory } from '../../runtime/http/memoryPlan.ts';
import { tinyModelDir, tinyQuestions } from '../support/tinyFamily.ts';

let small: OnnxRunner;
let large: OnnxRunner;
let prompts: number[][];

beforeAll(async () => {
  small = await OnnxRunner.load(tinyModelDir('small'));
  large = await OnnxRunner.load(tinyModelDir('large'));
  const tok = TextTokenizer.fromFolder(loadModelFolder(tinyModelDir('small')));
  prompts = tinyQuestions(12).map((q) => tok.encodeChat([{ role: 'user', content: q }]));
}, 60_000);
afterAll(async () => {
  await small?.close();
  await large?.close();
});

function cluster(kvTokens: number, concurrency = 12) {
  return new Cluster({
    clock: createRealClock(),
    maxConcurrency: concurrency,
    checkInvariants: true,
    models: [
      { name: 'small', runner: small, kvCapacityTokens: kvTokens },
      { name: 'large', runner: large, kvCapacityTokens: kvTokens },
    ],
  });
}

async function runAll(c: Cluster, maxTokens = 48, cancelAfter?: (i: number) => number | undefined): Promise<RequestResult[]> {
  const alg = rStitch({ tau: 0.01 });
  const handles = prompts.map((p, i) => {
    const h = c.submit({ prompt: p, maxTokens, algorithm: alg, sampling: { temperature: 0 } });
    const at = cancelAfter?.(i);
    if (at !== undefined) setTimeout(() => h.cancel(), at);
    return h;
  });
  return Promise.all(handles.map((h) => h.done));
}

function expectNoKvLeft(c: Cluster) {
  for (const l of c.laneStats()) {
    expect(l.kvBytes, l.name).toBe(0);
    expect(l.kvReservedBytes, l.name).toBe(0);
  }
  expect(small.cachedTokens).toBe(0);
  expect(large.cachedTokens).toBe(0);
}

describe('KV accounting on the bundled models', () => {
  it('returns every byte after requests end done, cancelled and failed', async () => {
    const c = cluster(Infinity);
    const results = await runAll(c, 48, (i) => (i % 3 === 1 ? 5 + i * 3 : undefined));
    const statuses = new Set(results.map((r) => r.status));
    expect(statuses.has('done')).toBe(true);
    expect(statuses.has('cancelled')).toBe(true);
    expectNoKvLeft(c);
    // A failed step: take the large model down mid-run, once it has run a batch of these requests
    // (a timer at 20 ms once fired after all four had finished on a quiet machine, and nothing failed).
    const alg = rStitch({ tau: 0.0 });
    const largeBatches = () => c.laneStats().find((l) => l.name === 'large')!.batches;
    const before = largeBatches();
    const hs = prompts.slice(0, 4).map((p) => c.submit({ prompt: p, maxTokens: 30, algorithm: alg }));
    const probe = setInterval(() => {
      if (largeBatches() === before) return;
      clearInterval(probe);
      c.setDown('large', true);
    }, 1);
    const rs = await Promise.all(hs.map((h) => h.done));
    clearInterval(probe);
    c.setDown('large', false);
    expect(rs.some((r) => r.status === 'failed')).toBe(true);
    await new Promise((r) => setTimeout(r, 50));
    expectNoKvLeft(c);
  });

  it('a budget too small for the load makes requests wait, not fail, and outputs do not change', async () => {
    const free = await runAll(cluster(Infinity));
    // Room for about three full requests per model: nine others must wait for admission, and
    // pending-return caches get evicted (recomputed on return) to make room.
    const longest = Math.max(...prompts.map((p) => p.length)) + 48;
    const tight = cluster(longest * 3);
    let sawWaiting = false;
    const probe = setInterval(() => {
      if (tight.laneStats().some((l) => l.waitingAdmission > 0)) sawWaiting = true;
    }, 2);
    const pressed = await runAll(tight);
    clearInterval(probe);
    expect(pressed.every((r) => r.status === 'done')).toBe(true);
    expect(sawWaiting).toBe(true);
    const evictions = tight.laneStats().reduce((a, l) => a + l.evictions, 0);
    expect(evictions).toBeGreaterThan(0);
    expect(pressed.map((r) => r.tokens)).toEqual(free.map((r) => r.tokens));
    expectNoKvLeft(tight);
  }, 120_000);

  it('plans one memory budget across models and refuses one that cannot hold them', () => {
    const needs = [small, large].map((r) => ({
      name: r.info.name,
      weightBytes: 5e6,
      kvBytesPerToken: r.info.kvBytesPerToken,
      maxContext: r.info.maxContext,
      maxBatch: 16,
    }));
    const plan = planMemory(256 * 2 ** 20, needs);
    const total = plan.reduce((a, p) => a + p.weightBytes + p.kvBytes, 0);
    expect(total).toBeLessThanOrEqual(256 * 2 ** 20);
    expect(plan[0].kvTokens).toBe(plan[1].kvTokens);
    expect(() => planMemory(10 * 2 ** 20, needs)).toThrow(/memory.budgetMiB is too small/);
  });
});
