// Turns trainFamily.py's weights into an HF / Optimum model folder the runner serves: configs, the Qwen3 tokenizer files, onnx/model.onnx (fp16 weights, compact vocabulary).
/*
 * Usage: npx tsx examples/training/exportFamily.ts --name small [--from /work/family-out] [--out /work/family-out/models]
 * Reads <from>/weights/<name>.{json,bin} and <from>/corpus/vocab.json; writes <out>/<name>/ with the graph
 * the real-shape fixtures use (test/support/realShape/decoderGraph.ts: the Optimum inputs and outputs,
 * each present a Concat(past, new)), its weights stored fp16 behind Casts (ORT folds them at load, so the
 * step computes in fp32), the table holding only the corpus' tokens (vocabIds), logits over all 151,936
 * ids through num_logits_to_keep, and `hidden_states` (the last layer after the final norm, what the router
 * heads of trainRouters.py read, as the old family's export had it). When <name>.reference.json is there, the folder's logits are checked
 * against PyTorch's at the last position of a few prompts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import type { DecoderArch } from '../../test/support/realShape/decoderArch.ts';
import { buildDecoderGraph } from '../../test/support/realShape/decoderGraph.ts';
import { writeOnnxModel } from '../../test/support/realShape/onnxWriter.ts';
import { configJson, generationConfigJson } from '../../test/support/realShape/realShapeSizes.ts';
import { QWEN3_IDS, qwen3TokenizerFiles } from './makeCorpus.ts';

interface WeightsManifest {
  name: string;
  config: { hidden: number; layers: number; heads: number; kv: number; head_dim: number; ffn: number };
  tensors: { name: string; shape: number[]; offset: number }[];
}

interface Reference {
  rows: { prompt: number[]; logits: number[] }[];
}

export function familyArch(c: WeightsManifest['config']): DecoderArch {
  return {
    family: 'qwen3',
    hiddenSize: c.hidden,
    numLayers: c.layers,
    numHeads: c.heads,
    numKvHeads: c.kv,
    headDim: c.head_dim,
    intermediateSize: c.ffn,
    vocabSize: QWEN3_IDS.vocab,
    // trained on chats of at most 147 tokens: a window of 1,024 is already past what it saw, and the memory plan reserves
    // one full-context request's KV (at Qwen3's 40,960 that was 300 MiB for the three models, more than their weights)
    maxPositions: 1024,
    rmsNormEps: 1e-6,
    ropeTheta: 1_000_000,
    ropeScaling: null,
    tiedEmbeddings: true,
    qkNorm: true,
  };
}

/** Largest |ORT - PyTorch| over each reference prompt's compact logits (unused ids must sit at -1e9). */
async function checkReference(modelPath: string, arch: DecoderArch, vocab: number[], ref: Reference): Promise<number> {
  const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1, logSeverityLevel: 3 });
  let worst = 0;
  for (const r of ref.rows) {
    const S = r.prompt.length;
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(r.prompt, BigInt), [1, S]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(S).fill(1n), [1, S]),
      position_ids: new ort.Tensor(
        'int64',
        BigInt64Array.from({ length: S }, (_, i) => BigInt(i)),
        [1, S],
      ),
      num_logits_to_keep: new ort.Tensor('int64', BigInt64Array.of(1n), []),
    };
    for (let l = 0; l < arch.numLayers; l++) {
      for (const k of ['key', 'value'])
        feeds[`past_key_values.${l}.${k}`] = new ort.Tensor('float32', new Float32Array(0), [1, arch.numKvHeads, 0, arch.headDim]);
    }
    const logits = (await session.run(feeds, ['logits'])).logits.data as Float32Array;
    if (logits.length !== arch.vocabSize) throw new Error(`exportFamily: logits have ${logits.length} columns, expected ${arch.vocabSize}`);
    vocab.forEach((id, i) => (worst = Math.max(worst, Math.abs(logits[id] - r.logits[i]))));
    const used = new Set(vocab);
    for (let id = 0; id < logits.length; id += 997)
      if (!used.has(id) && logits[id] > -1e8) throw new Error(`exportFamily: unused id ${id} has logit ${logits[id]}, not masked`);
  }
  await session.release();
  return worst;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { name: { type: 'string' }, from: { type: 'string', default: '/work/family-out' }, out: { type: 'string' } } });
  if (!values.name) throw new Error('--name is required (small, medium or large)');
  const from = path.resolve(values.from!);
  const out = path.resolve(values.out ?? path.join(from, 'models'), values.name);
  const manifest = JSON.parse(fs.readFileSync(path.join(from, 'weights', `${values.name}.json`), 'utf8')) as WeightsManifest;
  const bin = fs.readFileSync(path.join(from, 'weights', `${values.name}.bin`));
  const vocab = (JSON.parse(fs.readFileSync(path.join(from, 'corpus', 'vocab.json'), 'utf8')) as { ids: number[] }).ids;
  const byName = new Map(manifest.tensors.map((t) => [t.name, t]));
  const weightsFrom = (name: string, count: number): Float32Array => {
    const t = byName.get(name);
    if (!t) throw new Error(`exportFamily: ${values.name}.json has no tensor "${name}"`);
    const n = t.shape.reduce((a, b) => a * b, 1);
    if (n !== count) throw new Error(`exportFamily: tensor "${name}" has ${n} numbers, the graph needs ${count}`);
    return new Float32Array(bin.buffer.slice(bin.byteOffset + t.offset, bin.byteOffset + t.offset + n * 4));
  };
  const arch = familyArch(manifest.config);
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(path.join(out, 'onnx'), { recursive: true });
  fs.writeFileSync(path.join(out, 'config.json'), `${JSON.stringify(configJson(arch), null, 2)}\n`);
  // greedy by default: the task is graded by exact match
  fs.writeFileSync(path.join(out, 'generation_config.json'), `${JSON.stringify({ ...generationConfigJson(arch), do_sample: false }, null, 2)}\n`);
  const tok = qwen3TokenizerFiles();
  fs.copyFileSync(tok.json, path.join(out, 'tokenizer.json'));
  fs.copyFileSync(tok.config, path.join(out, 'tokenizer_config.json'));
  const modelPath = path.join(out, 'onnx', 'model.onnx');
  const t0 = performance.now();
  const w = writeOnnxModel(
    modelPath,
    buildDecoderGraph(arch, { seed: 'unused', weightsFrom, storage: 'fp16', vocabIds: vocab, logitsToKeep: true, hiddenStates: true }),
  );
  console.log(`exportFamily: ${out} (onnx/model.onnx ${(w.modelBytes / 1e6).toFixed(2)} MB in ${(performance.now() - t0).toFixed(0)} ms)`);
  const refPath = path.join(from, 'weights', `${values.name}.reference.json`);
  if (fs.existsSync(refPath)) {
    const worst = await checkReference(modelPath, arch, vocab, JSON.parse(fs.readFileSync(refPath, 'utf8')) as Reference);
    console.log(`exportFamily: logits against PyTorch (fp16-rounded weights): max |diff| ${worst.toExponential(2)}`);
    if (!(worst < 1e-2)) throw new Error(`exportFamily: ORT and PyTorch logits differ by ${worst}`);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === new URL(import.meta.url).pathname) await main();
