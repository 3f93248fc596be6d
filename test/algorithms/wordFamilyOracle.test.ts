// The bundled word-problem family (Qwen3 shapes, 151,936-token vocabulary): each algorithm it can run commits, batched and concurrent, what the sequential oracle commits.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinFactory } from '../../examples/algorithms/index.ts';
import { chatOf, DEFAULT_TASK, loadTask } from '../../runtime/eval/loadTask.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { BUNDLED_MODELS_DIR } from '../../runtime/runner/onnxAccuracy.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { expectClusterMatchesOracle } from '../support/clusterAgainstOracle.ts';

const NAMES = ['small', 'medium', 'large'] as const;
const PROMPTS = 4;
/** The family's answers run to about 90 tokens. */
const MAX_TOKENS = 96;
/** The router head each head-driven built-in reads by default; the family runs those whose head its small ships. */
const HEAD_OF: Record<string, string> = { citer: 'citer', r2r: 'r2r', 'co-llm': 'colm' };
const shipped = Object.keys(loadModelFolder(path.join(BUNDLED_MODELS_DIR, 'small')).routers);
const ALGORITHMS = ['r-stitch', 'me', ...Object.keys(HEAD_OF).filter((a) => shipped.includes(HEAD_OF[a]))];

const runners: Record<string, OnnxRunner> = {};
let prompts: number[][];

beforeAll(async () => {
  for (const n of NAMES) runners[n] = await OnnxRunner.load(path.join(BUNDLED_MODELS_DIR, n), { intraOpNumThreads: 1 });
  const tok = TextTokenizer.fromFolder(loadModelFolder(path.join(BUNDLED_MODELS_DIR, 'small')));
  prompts = loadTask(DEFAULT_TASK, BUNDLED_MODELS_DIR)
    .split('validation')
    .problems.slice(0, PROMPTS)
    .map((p) => tok.encodeChat(chatOf(p)));
}, 120_000);
afterAll(async () => {
  for (const r of Object.values(runners)) await r.close();
});

describe.each(ALGORITHMS.flatMap((name) => [false, true].map((sampled) => ({ name, sampled }))))(
  '$name on the word-problem family, sampled $sampled',
  ({ name, sampled }) => {
    it(`commits what the sequential oracle commits on ${PROMPTS} validation problems, token for token and model for model`, async () => {
      const algorithm = builtinFactory(name)();
      const sampling = (i: number) => (sampled ? { temperature: 0.7, seed: 4000 + i } : { temperature: 0 });
      const handoffs = await expectClusterMatchesOracle({ name, algorithm, runners, prompts, maxTokens: MAX_TOKENS, sampling });
      // The comparison means something only if the models actually switched.
      expect(handoffs).toBeGreaterThan(0);
    }, 120_000);
  },
);
