// Chunked prefill: a long prompt fed across steps under models[].maxStepTokens commits what one pass commits, and running requests keep committing meanwhile.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Algorithm } from '../../shared/algorithm.ts';
import type { TraceEvent } from '../../shared/trace.ts';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { VirtualClock } from '../../runtime/clock/virtualClock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import type { RequestResult } from '../../runtime/entry/requestState.ts';
import { runOracle } from '../support/sequentialOracle.ts';
import { singleModelAlgorithm } from '../../runtime/registry/builtins.ts';
import { builtinFactory } from '../../examples/algorithms/index.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { SimRunner } from '../../runtime/runner/simRunner.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { tinyModelDir, tinyQuestions } from '../support/tinyFamily.ts';

type BatchEvent = Extract<TraceEvent, { type: 'batch' }>;

/** The algorithm with its `route` calls counted: a chunk's output must never reach it. */
function countingRoutes<M>(alg: Algorithm<M>): { alg: Algorithm<M>; routes: { calls: number } } {
  const routes = { calls: 0 };
  return { routes, alg: { ...alg, route: (input) => (routes.calls++, alg.route(input)) } };
}

describe('chunked prefill on the simulated runner (virtual clock)', () => {
  const LONG = Array.from({ length: 200 }, (_, i) => 4 + ((i * 7) % 40));

  function serve(maxStepTokens: number) {
    const clock = new VirtualClock();
    const runner = new SimRunner({ name: 'small', vocabSize: 64, latency: (b, t) => 2 + b * 0.1 + t * 0.05 });
    const batches: BatchEvent[] = [];
    const cluster = new Cluster({
      clock,
      mode: 'async-immediate',
      checkInvariants: true,
      trace: { emit: (e) => void (e.type === 'batch' && batches.push(e)) },
      models: [{ name: 'small', runner, maxBatch: 8, maxStepTokens, threshold: 1, kvCapacityTokens: Infinity }],
    });
    const { alg, routes } = countingRoutes(singleModelAlgorithm('small'));
    const commits: { id: string; t: number }[] = [];
    const results = new Map<string, RequestResult>();
    const submit = (id: string, prompt: number[], maxTokens: number) =>
      cluster.submit({ id, prompt, maxTokens, algorithm: alg, onToken: () => void commits.push({ id, t: clock.now() }), onEnd: (r) => results.set(id, r) });
    // a request decoding already, then the long prompt arrives
    submit('running', [5, 6, 7], 60);
    clock.run({ stop: () => commits.length >= 3 });
    submit('long', LONG, 8);
    clock.run({ stop: () => results.size === 2 });
    return { results, commits, batches, routes, runner, lane: cluster.laneStats()[0] };
  }

  it('gives the tokens of one pass, and routes only the final chunk', () => {
    const chunked = serve(16);
    const whole = serve(Infinity);
    for (const id of ['running', 'long']) {
      expect(chunked.results.get(id)!.status).toBe('done');
      expect(chunked.results.get(id)!.tokens, id).toEqual(whole.results.get(id)!.tokens);
    }
    // 200 prompt tokens at 16 a step, less what the decode row takes of each step: many chunks
    expect(chunked.lane.chunks).toBeGreaterThanOrEqual(Math.floor(200 / 16));
    expect(whole.lane.chunks).toBe(0);
    // route runs once per committed token (no EOS here), never on a chunk: the same count as one pass
    const committed = [...chunked.results.values()].reduce((s, r) => s + r.tokens.length, 0);
    expect(chunked.routes.calls).toBe(committed);
    expect(whole.routes.calls).toBe(committed);
    expect(chunked.runner.liveCaches).toBe(0);
  });

  it('keeps the running request committing between the long prompt’s chunks', () => {
    const { commits, batches } = serve(16);
    const longBatches = batches.filter((b) => b.requestIds.includes('long'));
    const firstLong = commits.find((c) => c.id === 'long')!.t;
    const chunkSteps = longBatches.filter((b) => b.start < firstLong);
    expect(chunkSteps.length).toBeGreaterThanOrEqual(Math.floor(200 / 16));
    // no step feeds more than the budget
    for (const b of batches) expect(b.tokens).toBeLessThanOrEqual(16);
    // the running request committed in (nearly) every one of those steps
    const between = commits.filter((c) => c.id === 'running' && c.t > chunkSteps[0].start && c.t <= firstLong);
    expect(between.length).toBeGreaterThanOrEqual(chunkSteps.length - 1);
    // one pass: the prompt is one step, with nothing of the running request committed inside it
    const whole = serve(Infinity);
    const wholeLong = whole.batches.filter((b) => b.requestIds.includes('long'));
    expect(wholeLong[0].tokens).toBeGreaterThanOrEqual(200);
  });
});

describe('prompts under way keep their place', () => {
  it('the first of two long prompts is fed to the end before the second, and the decode row behind both keeps committing', () => {
    const clock = new VirtualClock();
    const runner = new SimRunner({ name: 'small', vocabSize: 64, latency: (b, t) => 2 + b * 0.1 + t * 0.05 });
    const cluster = new Cluster({
      clock,
      mode: 'async-immediate',
      checkInvariants: true,
      models: [{ name: 'small', runner, maxBatch: 8, maxStepTokens: 16, kvCapacityTokens: Infinity }],
    });
    const algorithm = singleModelAlgorithm('small');
    const first = new Map<string, number>();
    let decodes = 0;
    const done = new Set<string>();
    const submit = (id: string, prompt: number[], maxTokens: number) =>
      cluster.submit({
        id,
        prompt,
        maxTokens,
        algorithm,
        onToken: () => (id === 'running' ? decodes++ : first.has(id) || first.set(id, clock.now())),
        onEnd: () => void done.add(id),
      });
    submit('running', [5, 6, 7], 80);
    clock.run({ stop: () => decodes >= 2 });
    const long = Array.from({ length: 150 }, (_, i) => 4 + (i % 30));
    const ts = clock.now();
    submit('p1', long, 2);
    submit('p2', long.slice().reverse(), 2);
    const at = decodes;
    clock.run({ stop: () => done.size === 3 });
    // FIFO among prompts: p1 needs ~150/15 steps alone, p2 as many again after it
    const t0 = first.get('p1')! - ts;
    const t1 = first.get('p2')! - ts;
    expect(t1).toBeGreaterThan(t0 * 1.5);
    expect(decodes - at).toBeGreaterThanOrEqual(20);
  });
});

describe('chunked prefill on the bundled models (greedy)', () => {
  const NAMES = ['small', 'large'] as const;
  const runners: Record<string, OnnxRunner> = {};
  let long: number[];
  let short: number[][];
  beforeAll(async () => {
    for (const n of NAMES) runners[n] = await OnnxRunner.load(tinyModelDir(n));
    const tok = TextTokenizer.fromFolder(loadModelFolder(tinyModelDir('small')));
    const qs = tinyQuestions(20);
    // a few-shot-like preamble: twenty problems in one user turn, most of the bundled models' 256-token context
    long = tok.encodeChat([{ role: 'user', content: qs.join('\n\n') }]);
    short = qs.slice(0, 3).map((q) => tok.encodeChat([{ role: 'user', content: q }]));
  }, 60_000);
  afterAll(async () => {
    for (const r of Object.values(runners)) await r.close();
  });

  it('a long prompt fed in chunks of 16 gives the tokens of one pass (single model, and R2R with its handoff suffixes)', async () => {
    expect(long.length).toBeGreaterThan(150);
    for (const name of ['single', 'r2r'] as const) {
      const algorithm = name === 'single' ? singleModelAlgorithm('small') : builtinFactory('r2r')();
      const run = async (maxStepTokens: number) => {
        const cluster = new Cluster({
          clock: createRealClock(),
          mode: 'async-immediate',
          checkInvariants: true,
          models: algorithm.models.map((m) => ({ name: m, runner: runners[m], maxStepTokens })),
        });
        const prompts = [long, ...short];
        const out = await Promise.all(
          prompts.map((prompt, i) => cluster.submit({ id: `${name}-${i}`, prompt, maxTokens: 24, algorithm, sampling: { temperature: 0 } }).done),
        );
        return { out, chunks: cluster.laneStats().reduce((s, l) => s + l.chunks, 0) };
      };
      const chunked = await run(16);
      expect(chunked.chunks, name).toBeGreaterThanOrEqual(Math.floor(long.length / 16));
      for (const [i, prompt] of [long, ...short].entries()) {
        const want = await runOracle(algorithm, runners, { id: `${name}-${i}`, prompt, maxTokens: 24, sampling: { temperature: 0 } });
        expect(chunked.out[i].status).toBe('done');
        expect(chunked.out[i].tokens, `${name} prompt ${i}`).toEqual(want.tokens);
        expect(chunked.out[i].producedBy, `${name} prompt ${i}`).toEqual(want.producedBy);
      }
    }
  }, 120_000);
});
