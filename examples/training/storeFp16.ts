// Rewrites an fp32 ONNX export in place so its weights are stored fp16, each behind a Cast to float32, as exportFamily.ts stores the bundled family's.
/*
 * Usage: npx tsx examples/training/storeFp16.ts <model.onnx>...
 * Every inline float32 initializer of two or more dimensions and at least MIN_BYTES (the linear
 * weights and the embedding table, what decoderGraph.ts's fp16 storage covers) becomes a float16
 * initializer named `<name>_fp16` read through `Cast(to float)` named `<name>`, so every node reads
 * the name it read before, the inputs and outputs stay float32, and ONNX Runtime folds the Casts at
 * load (a step computes in fp32 from fp16-rounded weights). Norm weights (one dimension), shapes,
 * scalars and Constant nodes (rotary tables, the mask bias) are copied unchanged. A file with no such
 * initializer left is not rewritten, so running it twice changes nothing.
 */
import fs from 'node:fs';
import path from 'node:path';
import protobuf from 'protobufjs/minimal.js';
import {
  concat,
  fields,
  FLOAT,
  FLOAT16,
  GRAPH_INITIALIZER,
  GRAPH_NODE,
  MODEL_GRAPH,
  TENSOR_DATA_LOCATION,
  TENSOR_DATA_TYPE,
  TENSOR_DIMS,
  TENSOR_NAME,
  TENSOR_RAW_DATA,
  text,
  wrap,
} from '../../runtime/runner/graph/onnxProto.ts';
import { float16Bits } from '../../test/support/realShape/quantizeWeights.ts';

const { Writer } = protobuf;

/** Smaller matrices stay float32 (onnx's own external-data threshold). */
const MIN_BYTES = 1024;
const FP16_MAX = 65504;

export interface Fp16Report {
  converted: number;
  /** float32 bytes stored as float16. */
  weightBytes: number;
  /** Largest |w - fp16(w)| over the converted weights. */
  maxRoundError: number;
  /** Nonzero weights fp16 rounds to zero. */
  flushed: number;
}

/** A Cast(to float) NodeProto, as graph field GRAPH_NODE. */
function castNode(from: string, to: string): Uint8Array {
  const w = Writer.create();
  w.uint32((1 << 3) | 2).string(from);
  w.uint32((2 << 3) | 2).string(to);
  w.uint32((3 << 3) | 2).string(`${to}/cast_fp16`);
  w.uint32((4 << 3) | 2).string('Cast');
  w.uint32((5 << 3) | 2).fork();
  w.uint32((1 << 3) | 2).string('to');
  w.uint32(3 << 3).int64(FLOAT);
  w.uint32(20 << 3).int32(2);
  w.ldelim();
  return wrap(GRAPH_NODE, w.finish());
}

/** `model` (ModelProto bytes with inline weights) with its float32 weights stored as float16, and what changed. */
export function storeFp16(model: Uint8Array): { model: Uint8Array; report: Fp16Report } {
  const top = fields(model);
  const gi = top.findIndex((f) => f.field === MODEL_GRAPH && f.bytes);
  if (gi < 0) throw new Error('storeFp16: the ONNX model has no graph');
  const graph = fields(top[gi].bytes!);
  const names = new Set<string>();
  for (const f of graph) if (f.field === GRAPH_INITIALIZER) names.add(text(fields(f.bytes!).find((t) => t.field === TENSOR_NAME)?.bytes));
  const report: Fp16Report = { converted: 0, weightBytes: 0, maxRoundError: 0, flushed: 0 };
  const casts: Uint8Array[] = [];
  const parts = graph.map((f) => {
    if (f.field !== GRAPH_INITIALIZER) return f.raw;
    const t = fields(f.bytes!);
    const raw = t.find((x) => x.field === TENSOR_RAW_DATA)?.bytes;
    const type = t.find((x) => x.field === TENSOR_DATA_TYPE)?.value;
    // dims may be written one field each or packed into one (one varint a dimension, each ending in a byte below 0x80)
    const rank = t.filter((x) => x.field === TENSOR_DIMS).reduce((n, x) => n + (x.bytes ? x.bytes.filter((b) => b < 0x80).length : 1), 0);
    if (type !== FLOAT || rank < 2 || !raw || raw.length < MIN_BYTES || t.some((x) => x.field === TENSOR_DATA_LOCATION)) return f.raw;
    const name = text(t.find((x) => x.field === TENSOR_NAME)?.bytes);
    const stored = `${name}_fp16`;
    if (names.has(stored)) throw new Error(`storeFp16: initializer "${stored}" already exists`);
    const w32 = new Float32Array(Uint8Array.from(raw).buffer);
    const half = float16Bits(w32);
    for (let i = 0; i < w32.length; i++) {
      if (!(Math.abs(w32[i]) <= FP16_MAX)) throw new Error(`storeFp16: "${name}" holds ${w32[i]}, outside float16's range`);
      const back = halfToFloat(half[i]);
      report.maxRoundError = Math.max(report.maxRoundError, Math.abs(w32[i] - back));
      if (w32[i] !== 0 && back === 0) report.flushed++;
    }
    // the tensor's fields in their order, three of them replaced
    const tensor = t.map((x) => {
      const w = Writer.create();
      if (x.field === TENSOR_DATA_TYPE) w.uint32(TENSOR_DATA_TYPE << 3).int32(FLOAT16);
      else if (x.field === TENSOR_NAME) w.uint32((TENSOR_NAME << 3) | 2).string(stored);
      else if (x.field === TENSOR_RAW_DATA) w.uint32((TENSOR_RAW_DATA << 3) | 2).bytes(new Uint8Array(half.buffer));
      else return x.raw;
      return w.finish();
    });
    report.converted++;
    report.weightBytes += raw.length;
    casts.push(castNode(stored, name));
    return wrap(GRAPH_INITIALIZER, concat(tensor));
  });
  if (report.converted === 0) return { model, report };
  // nodes must come in topological order: the Casts go before the first node that may read them
  const first = graph.findIndex((f) => f.field === GRAPH_NODE);
  parts.splice(first < 0 ? parts.length : first, 0, ...casts);
  const rewritten = wrap(MODEL_GRAPH, concat(parts));
  return { model: concat(top.map((f, i) => (i === gi ? rewritten : f.raw))), report };
}

/** The number the IEEE half bits `h` hold. */
function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

function main(): void {
  const files = process.argv.slice(2);
  if (files.length === 0) throw new Error('usage: npx tsx examples/training/storeFp16.ts <model.onnx>...');
  for (const file of files) {
    const before = fs.readFileSync(file);
    const { model, report } = storeFp16(before);
    if (report.converted === 0) {
      console.log(`storeFp16: ${file}: no float32 matrix of ${MIN_BYTES} bytes or more, left as it is`);
      continue;
    }
    const tmp = `${file}.tmp-${process.pid}`;
    fs.writeFileSync(tmp, model);
    fs.renameSync(tmp, file);
    console.log(
      `storeFp16: ${file}: ${report.converted} weights (${report.weightBytes} bytes fp32) stored fp16; ${before.length} -> ${model.length} bytes; ` +
        `max |w - fp16(w)| ${report.maxRoundError.toExponential(2)}, ${report.flushed} nonzero weights rounded to 0`,
    );
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === new URL(import.meta.url).pathname) main();
