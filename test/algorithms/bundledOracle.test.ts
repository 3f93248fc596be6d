// End to end on the bundled ONNX models: each algorithm's output through the batched, concurrent cluster equals the sequential oracle's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinAlgorithms } from '../../examples/algorithms/index.ts';
import { createRealClock } from '../../runtime/clock/clock.ts';
import { Cluster } from '../../runtime/engine/cluster.ts';
import { runOracle } from '../../runtime/oracle/sequentialOracle.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { heldoutQuestions, modelDir } from '../models/helpers.ts';

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

describe.each(['r-stitch', 'citer', 'r2r', 'co-llm', 'me'])('%s on the bundled models', (name) => {
  it(`commits what the sequential oracle commits on ${PROMPTS} held-out problems, token for token and model for model`, async () => {
    const algorithm = builtinAlgorithms[name]();
    const cluster = new Cluster({
      clock: createRealClock(),
      mode: 'async-delayed',
      retainState: true,
      maxConcurrency: 8,
      checkInvariants: true,
      models: algorithm.models.map((m) => ({ name: m, runner: runners[m] })),
    });
    // All at once: batched steps, requests away at peers, returns joining running batches.
    const served = await Promise.all(
      prompts.map((prompt, i) => cluster.submit({ id: `${name}-${i}`, prompt, maxTokens: MAX_TOKENS, algorithm, sampling: { temperature: 0 } }).done),
    );
    let handoffs = 0;
    for (const [i, prompt] of prompts.entries()) {
      const oracle = await runOracle(algorithm, runners, { id: `${name}-${i}`, prompt, maxTokens: MAX_TOKENS, sampling: { temperature: 0 } });
      expect(served[i].status).toBe('done');
      expect(served[i].tokens, `${name} prompt ${i}`).toEqual(oracle.tokens);
      expect(served[i].producedBy, `${name} prompt ${i}`).toEqual(oracle.producedBy);
      expect(served[i].handoffs).toBe(oracle.handoffs);
      handoffs += oracle.handoffs;
    }
    // The comparison means something only if the models actually switched.
    expect(handoffs).toBeGreaterThan(PROMPTS);
    for (const l of cluster.laneStats()) expect(l.kvBytes, l.name).toBe(0);
  }, 60_000);
});
