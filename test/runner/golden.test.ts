// Each bundled model, run by OnnxRunner, reproduces the greedy outputs PyTorch recorded at export time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { TextTokenizer } from '../../runtime/runner/tokenizer.ts';
import { loadModelFolder } from '../../runtime/runner/modelFolder.ts';
import { MODEL_NAMES, modelDir, readGolden, soloGenerate } from './helpers.ts';

describe.each(MODEL_NAMES)('golden greedy output: %s', (name) => {
  let runner: OnnxRunner;
  beforeAll(async () => {
    runner = await OnnxRunner.load(modelDir(name));
  });
  afterAll(async () => runner?.close());

  it('matches golden.json token for token', async () => {
    const g = readGolden(name);
    expect(g.rows.length).toBeGreaterThanOrEqual(20);
    for (const [i, row] of g.rows.entries()) {
      const out = await soloGenerate(runner, i, row.input_ids, g.max_new_tokens);
      expect(out, `prompt ${JSON.stringify(row.prompt)}`).toEqual(row.output_ids);
    }
  });

  it('tokenizer + chat template produce the prompt ids PyTorch used', () => {
    const tok = TextTokenizer.fromFolder(loadModelFolder(modelDir(name)));
    for (const row of readGolden(name).rows) {
      const question = row.prompt.replace(/^Q: /, '').replace(/=\nA: $/, '');
      expect(tok.encodeChat([{ role: 'user', content: question }])).toEqual(row.input_ids);
      // a trailing '=' typed by the user is not doubled
      expect(tok.encodeChat([{ role: 'user', content: `${question}=` }])).toEqual(row.input_ids);
      expect(tok.decode(row.input_ids)).toBe(row.prompt);
    }
  });

  it('reports model info from config.json', () => {
    const c = loadModelFolder(modelDir(name)).config;
    expect(runner.info.kvBytesPerToken).toBe(2 * c.numLayers * c.numKvHeads * c.headDim * 4);
    expect(runner.info.maxContext).toBe(c.maxContext);
    expect(runner.info.vocabSize).toBe(c.vocabSize);
  });
});
