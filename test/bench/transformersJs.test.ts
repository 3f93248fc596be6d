// The transformers-js suite compares like with like: transformers.js' batched generate on a bundled model emits the server runner's greedy tokens.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runGenerate } from './transformersJs.ts';
import { benchPrompt } from '../../runtime/loadgen/benchPrompt.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { BUNDLED_MODELS_DIR } from '../../runtime/runner/onnxAccuracy.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { NO_WANTS } from '../../shared/algorithm.ts';

const MODEL = 'small';
const NEW_TOKENS = 24;

describe('transformers.js beside the server runner', () => {
  let runner: OnnxRunner;
  let tokenizer: TextTokenizer;
  beforeAll(async () => {
    runner = await OnnxRunner.load(path.join(BUNDLED_MODELS_DIR, MODEL), { intraOpNumThreads: 1 });
    tokenizer = TextTokenizer.fromFolder(loadModelFolder(path.join(BUNDLED_MODELS_DIR, MODEL)));
  });
  afterAll(async () => runner.close());

  /** Greedy with EOS suppressed, one row at a time through the runner the engine uses (ignore_eos on the server). */
  async function greedy(prompt: number[], cacheId: number): Promise<number[]> {
    const out: number[] = [];
    let tokens = prompt;
    let position = 0;
    while (out.length < NEW_TOKENS) {
      const step = await runner.step([
        { cacheId, requestId: `r${cacheId}`, tokens, position, sampling: { temperature: 0, topP: 1, topK: 0, seed: 0, suppressEos: true }, wants: NO_WANTS },
      ]);
      position += tokens.length;
      tokens = [step.rows[0].token];
      out.push(step.rows[0].token);
    }
    runner.release(cacheId);
    return out;
  }

  it('generates the same tokens for a left-padded batch of the bench prompts, and counts every one', async () => {
    const prompts = [0, 1, 2, 3].map((i) => tokenizer.encodeChat([{ role: 'user', content: benchPrompt(i) }]));
    // Prompts of unequal length, so the batch really is padded on the left.
    expect(new Set(prompts.map((p) => p.length)).size).toBeGreaterThan(1);
    const run = await runGenerate(MODEL, { warmup: [], prompts, batch: prompts.length, maxTokens: NEW_TOKENS, padTokenId: 0 });
    expect(run.outputTokens).toBe(prompts.length * NEW_TOKENS);
    expect(run.tokS).toBeGreaterThan(0);
    const expected = [];
    for (const [k, p] of prompts.entries()) expected.push(await greedy(p, k + 1));
    expect(run.firstBatch).toEqual(expected);
  }, 60_000);
});
