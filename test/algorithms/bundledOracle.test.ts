// End to end on the bundled ONNX models: each algorithm's output through the batched, concurrent cluster equals the sequential oracle's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinFactory } from '../../examples/algorithms/index.ts';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/entry/cluster.ts';
import { runOracle } from '../support/sequentialOracle.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { WorkerRunner } from '../../runtime/runner/workerRunner.ts';
import { ThreadEngine } from '../../runtime/transport/threadEngine.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { heldoutQuestions, modelDir } from '../runner/helpers.ts';
import { expectClusterMatchesOracle } from '../support/clusterAgainstOracle.ts';

const NAMES = ['small', 'medium', 'large'] as const;
const PROMPTS = 12;
const MAX_TOKENS = 48;
const runners: Record<string, OnnxRunner> = {};
let prompts: number[][];

beforeAll(async () => {
  for (const n of NAMES) runners[n] = await OnnxRunner.load(modelDir(n));
  const tok = TextTokenizer.fromFolder(loadModelFolder(modelDir('small')));
  prompts = heldoutQuestions(PROMPTS).map((q) => tok.encodeChat([{ role: 'user', content: q }]));
}, 60_000);
afterAll(async () => {
  for (const r of Object.values(runners)) await r.close();
});

// Greedy, and sampled (seeded) so draws are checked by position too.
const SETTINGS = ['r-stitch', 'citer', 'r2r', 'co-llm', 'me'].flatMap((name) => [false, true].map((sampled) => ({ name, sampled })));

describe.each(SETTINGS)('$name on the bundled models, sampled $sampled', ({ name, sampled }) => {
  it(`commits what the sequential oracle commits on ${PROMPTS} held-out problems, token for token and model for model`, async () => {
    const algorithm = builtinFactory(name)();
    const sampling = (i: number) => (sampled ? { temperature: 0.7, seed: 1000 + i } : { temperature: 0 });
    const handoffs = await expectClusterMatchesOracle({ name, algorithm, runners, prompts, maxTokens: MAX_TOKENS, sampling });
    // The comparison means something only if the models actually switched.
    expect(handoffs).toBeGreaterThan(PROMPTS);
  }, 60_000);
});

// Worker threads: each model alone in its worker, the engine on this thread.
describe('worker runners', () => {
  const workers: Record<string, WorkerRunner> = {};
  beforeAll(async () => {
    for (const n of NAMES) workers[n] = await WorkerRunner.start(modelDir(n), { intraOpNumThreads: 1 });
  }, 60_000);
  afterAll(async () => {
    for (const w of Object.values(workers)) await w.close();
  });

  it.each(['r-stitch', 'r2r'])(
    '%s commits what the sequential oracle commits',
    async (name) => {
      const algorithm = builtinFactory(name)();
      const sampling = (i: number) => ({ temperature: 0.7, seed: 2000 + i });
      await expectClusterMatchesOracle({ name: `w-${name}`, algorithm, runners, served: workers, prompts, maxTokens: MAX_TOKENS, sampling });
    },
    60_000,
  );
});

// Thread placement, the default for ONNX models: each model's engine (scheduler, KV pool, routing) and
// its runner together in one worker thread; handoffs go thread to thread.
describe('thread placement', () => {
  it.each(SETTINGS)(
    '$name, sampled $sampled, commits what the sequential oracle commits',
    async ({ name, sampled }) => {
      const algorithm = builtinFactory(name)();
      const threads = await Promise.all(
        algorithm.models.map((m) => ThreadEngine.start(m, { kind: 'onnx', folder: modelDir(m), opts: { intraOpNumThreads: 1 } })),
      );
      try {
        const cluster = new Cluster({
          clock: createRealClock(),
          mode: 'async-delayed',
          retainState: true,
          maxConcurrency: 8,
          checkInvariants: true,
          models: algorithm.models.map((m, i) => ({ name: m, thread: threads[i] })),
        });
        const sampling = (i: number) => (sampled ? { temperature: 0.7, seed: 3000 + i } : { temperature: 0 });
        const algorithmRef = { key: `${name}@1`, source: { kind: 'builtin' as const, factory: name } };
        const served = await Promise.all(
          prompts.map(
            (prompt, i) => cluster.submit({ id: `t-${name}-${i}`, prompt, maxTokens: MAX_TOKENS, algorithm, algorithmRef, sampling: sampling(i) }).done,
          ),
        );
        let handoffs = 0;
        for (const [i, prompt] of prompts.entries()) {
          const oracle = await runOracle(algorithm, runners, { id: `t-${name}-${i}`, prompt, maxTokens: MAX_TOKENS, sampling: sampling(i) });
          expect(served[i].status, served[i].error?.message).toBe('done');
          expect(served[i].tokens, `${name} prompt ${i}`).toEqual(oracle.tokens);
          expect(served[i].producedBy, `${name} prompt ${i}`).toEqual(oracle.producedBy);
          expect(served[i].handoffs).toBe(oracle.handoffs);
          handoffs += oracle.handoffs;
        }
        expect(handoffs).toBeGreaterThan(PROMPTS);
        await expect.poll(() => cluster.laneStats().map((l) => l.kvBytes), { timeout: 2000 }).toEqual(algorithm.models.map(() => 0));
      } finally {
        await Promise.all(threads.map((t) => t.close()));
      }
    },
    90_000,
  );
});
