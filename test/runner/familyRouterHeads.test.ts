// A word-problem family folder (compact vocabulary, hidden_states, logits for the last position) with a routers/ folder as trainRouters.py writes it: the runner loads the heads and scores each row from its own hidden state.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { familyArch } from '../../examples/training/exportFamily.ts';
import { QWEN3_IDS, qwen3TokenizerFiles } from '../../examples/training/makeCorpus.ts';
import { GREEDY, type StepRow } from '../../runtime/runner/modelRunner.ts';
import { OnnxRunner } from '../../runtime/runner/onnxRunner.ts';
import { buildDecoderGraph } from '../support/realShape/decoderGraph.ts';
import { GraphBuilder } from '../support/realShape/graphBuilder.ts';
import { writeOnnxModel } from '../support/realShape/onnxWriter.ts';
import { configJson, generationConfigJson } from '../support/realShape/realShapeSizes.ts';
import { seededNormal } from '../support/realShape/seededNormal.ts';

const ARCH = familyArch({ hidden: 32, layers: 2, heads: 4, kv: 2, head_dim: 16, ffn: 64 });
const H = ARCH.hiddenSize;
// a compact vocabulary: a few ordinary ids and both end ids, as vocab.json holds them
const IDS = [15, 16, 17, 18, 19, 576, 1207, 3555, QWEN3_IDS.bos, QWEN3_IDS.eos];
const G = seededNormal('heads/g', H, 1);
const TOKEN_SCALE = 1e-6;
const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

/** A head over `hidden_states` (and, for R2R's inputs, the token and top logits): sigmoid(h·G + token·1e-6 + 0·Σ topk). */
function writeHead(file: string, withToken: boolean): void {
  const g = new GraphBuilder('head');
  const h = g.input('hidden_states', 'float32', ['batch_size', H]);
  let x = g.op('MatMul', [h, g.init('g', 'float32', [H, 1], () => G)]);
  if (withToken) {
    const tok = g.input('token_id', 'int64', ['batch_size', 1]);
    const top = g.input('topk_logits', 'float32', ['batch_size', 8]);
    x = g.op('Add', [x, g.op('Mul', [g.op('Cast', [tok], { to: { i: 1 } }), g.f32([TOKEN_SCALE], true)])]);
    x = g.op('Add', [x, g.op('Mul', [g.op('ReduceSum', [top, g.i64([1])], { keepdims: { i: 1 } }), g.f32([0], true)])]);
  }
  g.op('Sigmoid', [x], {}, { output: 'score' });
  g.output('score', 'float32', ['batch_size', 1]);
  writeOnnxModel(file, g.spec([{ domain: '', version: 17 }]));
}

const input = (source: string, shape: (string | number)[], dtype = 'float32') => ({ shape, dtype, source });

describe('router heads on a compact-vocabulary family export', () => {
  let dir: string;
  let runner: OnnxRunner;
  beforeAll(async () => {
    dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'family-heads-')), 'small');
    fs.mkdirSync(path.join(dir, 'onnx'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'routers'));
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(configJson(ARCH)));
    fs.writeFileSync(path.join(dir, 'generation_config.json'), JSON.stringify({ ...generationConfigJson(ARCH), do_sample: false }));
    const tok = qwen3TokenizerFiles();
    fs.copyFileSync(tok.json, path.join(dir, 'tokenizer.json'));
    fs.copyFileSync(tok.config, path.join(dir, 'tokenizer_config.json'));
    // the options exportFamily.ts passes (seeded weights stand in for trained ones)
    writeOnnxModel(
      path.join(dir, 'onnx', 'model.onnx'),
      buildDecoderGraph(ARCH, { seed: 'family-heads', storage: 'fp16', vocabIds: IDS, logitsToKeep: true, hiddenStates: true }),
    );
    writeHead(path.join(dir, 'routers', 'colm.onnx'), false);
    writeHead(path.join(dir, 'routers', 'r2r.onnx'), true);
    const hidden = input('hidden', ['batch_size', H]);
    const routers = {
      model: 'small',
      labelled_by: 'large',
      topk: 8,
      heads: {
        colm: { file: 'colm.onnx', inputs: { hidden_states: hidden }, threshold: 0.5, route_when: 'score >= threshold' },
        r2r: {
          file: 'r2r.onnx',
          inputs: { hidden_states: hidden, token_id: input('token', ['batch_size', 1], 'int64'), topk_logits: input('topk_logits', ['batch_size', 8]) },
          threshold: 0.5,
          route_when: 'score >= threshold',
        },
      },
    };
    fs.writeFileSync(path.join(dir, 'routers', 'routers.json'), JSON.stringify(routers));
    runner = await OnnxRunner.load(dir);
  }, 60_000);
  afterAll(async () => {
    await runner?.close();
    fs.rmSync(path.dirname(dir), { recursive: true, force: true });
  });

  const wants = { topK: 8, hidden: true, heads: ['colm', 'r2r'] };
  const row = (cacheId: number, tokens: number[], position: number): StepRow => ({
    cacheId,
    requestId: `r${cacheId}`,
    tokens,
    position,
    sampling: GREEDY,
    wants,
  });
  const prompts = [
    [15, 576, 16, 1207, 17, 3555],
    [18, 19, 576],
  ];

  it('loads both heads and scores each row of a batched prefill and decode from its own hidden state', async () => {
    expect(Object.keys(runner.folder.routers).sort()).toEqual(['colm', 'r2r']);
    const solo: { hidden?: Float32Array }[] = [];
    for (const [i, p] of prompts.entries()) {
      solo.push((await runner.step([row(10 + i, p, 0)])).rows[0]);
      runner.release(10 + i);
    }
    const batched = await runner.step(prompts.map((p, i) => row(20 + i, p, 0)));
    for (const [i, r] of batched.rows.entries()) {
      const h = r.hidden!;
      expect(h).toHaveLength(H);
      // padding and num_logits_to_keep do not shift which position's hidden state a row reads
      h.forEach((x, j) => expect(x).toBeCloseTo(solo[i].hidden![j], 4));
      expect(IDS).toContain(r.token);
      const dot = h.reduce((s, x, j) => s + x * G[j], 0);
      expect(r.heads.colm).toBeCloseTo(sigmoid(dot), 5);
      expect(r.heads.r2r).toBeCloseTo(sigmoid(dot + r.token * TOKEN_SCALE), 5);
    }
    // the two prompts end differently: their hidden states (and scores) differ
    expect(batched.rows[0].heads.colm).not.toBeCloseTo(batched.rows[1].heads.colm, 3);
    const next = await runner.step(prompts.map((p, i) => row(20 + i, [batched.rows[i].token], p.length)));
    for (const r of next.rows) expect(r.heads.colm).toBeCloseTo(sigmoid(r.hidden!.reduce((s, x, j) => s + x * G[j], 0)), 5);
    prompts.forEach((_, i) => runner.release(20 + i));
  });
});
