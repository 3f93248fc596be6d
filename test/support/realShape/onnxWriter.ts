// Writes an ONNX ModelProto to a file, streaming its initializers one at a time, inline or into an external data file.
import fs from 'node:fs';
import path from 'node:path';
import protobuf from 'protobufjs/minimal.js';

const { Writer } = protobuf;

/** Element types this writer knows, with their onnx.proto TensorProto.DataType numbers. */
export const ONNX_TYPES = { float32: 1, uint8: 2, int8: 3, int32: 6, int64: 7, bool: 9, float16: 10 } as const;
export type OnnxType = keyof typeof ONNX_TYPES;

/** The typed array a tensor of each type is given as (float16: its IEEE half bits). */
export interface OnnxArrays {
  float32: Float32Array;
  uint8: Uint8Array;
  int8: Int8Array;
  int32: Int32Array;
  int64: BigInt64Array;
  bool: Uint8Array;
  float16: Uint16Array;
}

export interface TensorSpec<T extends OnnxType = OnnxType> {
  name: string;
  type: T;
  dims: readonly number[];
  /** Made when the tensor is written (so a large model never holds every weight at once). */
  data: () => OnnxArrays[T];
}

export type AttrValue = { i: number } | { f: number } | { s: string } | { ints: readonly number[] } | { floats: readonly number[] } | { t: TensorSpec };

export interface NodeSpec {
  op: string;
  inputs: readonly string[];
  outputs: readonly string[];
  name: string;
  domain?: string;
  attrs?: Readonly<Record<string, AttrValue>>;
}

export interface ValueSpec {
  name: string;
  type: OnnxType;
  /** A number is a fixed dimension, a string a named (symbolic) one. */
  shape: readonly (number | string)[];
}

export interface ModelSpec {
  graphName: string;
  inputs: readonly ValueSpec[];
  outputs: readonly ValueSpec[];
  nodes: readonly NodeSpec[];
  initializers: readonly TensorSpec[];
  /** Operator sets, e.g. { domain: '', version: 17 } (ai.onnx) and { domain: 'com.microsoft', version: 1 }. */
  opsets: readonly { domain: string; version: number }[];
}

export interface WriteOptions {
  /** File name, beside the model, that takes every initializer of at least `externalMinBytes` (the Optimum `model.onnx_data`). */
  externalData?: string;
  /** Smaller initializers stay inline, as onnx's own convert does (default 1024). */
  externalMinBytes?: number;
}

export interface WrittenModel {
  modelBytes: number;
  externalBytes: number;
}

const LEN = 2;
const VARINT = 0;
const FIXED32 = 5;
/** Offsets in the external file are aligned so each tensor can be mapped on its own. */
const EXTERNAL_ALIGN = 64;
const IR_VERSION = 8;

const tag = (field: number, wire: number) => (field << 3) | wire;

function bytesOf(a: ArrayBufferView): Buffer {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}

function varintLength(n: number): number {
  let len = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

function checkTensor(t: TensorSpec, data: ArrayBufferView): void {
  const count = t.dims.reduce((a, b) => a * b, 1);
  const per = (data as { BYTES_PER_ELEMENT?: number }).BYTES_PER_ELEMENT ?? 1;
  if (data.byteLength / per !== count)
    throw new Error(`initializer "${t.name}": dims [${t.dims.join(', ')}] hold ${count} elements but its data has ${data.byteLength / per}`);
}

/** A TensorProto without its data (dims, type, name), to which raw_data or external_data is appended. */
function tensorHead(t: TensorSpec): Uint8Array {
  const w = Writer.create();
  for (const d of t.dims) w.uint32(tag(1, VARINT)).int64(d);
  w.uint32(tag(2, VARINT)).int32(ONNX_TYPES[t.type]);
  w.uint32(tag(8, LEN)).string(t.name);
  return w.finish();
}

function encodeTensor(w: protobuf.Writer, t: TensorSpec): void {
  const data = t.data();
  checkTensor(t, data);
  w.bytes(Buffer.concat([tensorHead(t), Buffer.from([tag(9, LEN)]), encodeLength(data.byteLength), bytesOf(data)]));
}

function encodeLength(n: number): Buffer {
  return Buffer.from(Writer.create().uint32(n).finish());
}

function encodeAttr(w: protobuf.Writer, name: string, v: AttrValue): void {
  w.uint32(tag(5, LEN)).fork();
  w.uint32(tag(1, LEN)).string(name);
  // AttributeProto.type: FLOAT 1, INT 2, STRING 3, TENSOR 4, FLOATS 6, INTS 7
  if ('i' in v) w.uint32(tag(3, VARINT)).int64(v.i).uint32(tag(20, VARINT)).int32(2);
  else if ('f' in v) w.uint32(tag(2, FIXED32)).float(v.f).uint32(tag(20, VARINT)).int32(1);
  else if ('s' in v) w.uint32(tag(4, LEN)).bytes(Buffer.from(v.s, 'utf8')).uint32(tag(20, VARINT)).int32(3);
  else if ('t' in v) {
    w.uint32(tag(5, LEN));
    encodeTensor(w, v.t);
    w.uint32(tag(20, VARINT)).int32(4);
  } else if ('ints' in v) {
    for (const x of v.ints) w.uint32(tag(8, VARINT)).int64(x);
    w.uint32(tag(20, VARINT)).int32(7);
  } else {
    for (const x of v.floats) w.uint32(tag(7, FIXED32)).float(x);
    w.uint32(tag(20, VARINT)).int32(6);
  }
  w.ldelim();
}

function encodeNode(w: protobuf.Writer, n: NodeSpec): void {
  w.uint32(tag(1, LEN)).fork();
  for (const i of n.inputs) w.uint32(tag(1, LEN)).string(i);
  for (const o of n.outputs) w.uint32(tag(2, LEN)).string(o);
  w.uint32(tag(3, LEN)).string(n.name);
  w.uint32(tag(4, LEN)).string(n.op);
  for (const [k, v] of Object.entries(n.attrs ?? {})) encodeAttr(w, k, v);
  if (n.domain) w.uint32(tag(7, LEN)).string(n.domain);
  w.ldelim();
}

function encodeValue(w: protobuf.Writer, field: number, v: ValueSpec): void {
  w.uint32(tag(field, LEN)).fork();
  w.uint32(tag(1, LEN)).string(v.name);
  w.uint32(tag(2, LEN)).fork(); // TypeProto
  w.uint32(tag(1, LEN)).fork(); // TypeProto.Tensor
  w.uint32(tag(1, VARINT)).int32(ONNX_TYPES[v.type]);
  w.uint32(tag(2, LEN)).fork(); // TensorShapeProto
  for (const d of v.shape) {
    w.uint32(tag(1, LEN)).fork();
    if (typeof d === 'number') w.uint32(tag(1, VARINT)).int64(d);
    else w.uint32(tag(2, LEN)).string(d);
    w.ldelim();
  }
  w.ldelim().ldelim().ldelim().ldelim();
}

/** The graph's fields but its initializers (GraphProto fields may come in any order: they are appended after). */
function graphHead(spec: ModelSpec): Uint8Array {
  const w = Writer.create();
  for (const n of spec.nodes) encodeNode(w, n);
  w.uint32(tag(2, LEN)).string(spec.graphName);
  for (const v of spec.inputs) encodeValue(w, 11, v);
  for (const v of spec.outputs) encodeValue(w, 12, v);
  return w.finish();
}

function modelHead(spec: ModelSpec): Uint8Array {
  const w = Writer.create();
  w.uint32(tag(1, VARINT)).int64(IR_VERSION);
  w.uint32(tag(2, LEN)).string('tokenrouter-real-shape');
  w.uint32(tag(3, LEN)).string('1');
  for (const o of spec.opsets) {
    w.uint32(tag(8, LEN)).fork();
    if (o.domain) w.uint32(tag(1, LEN)).string(o.domain);
    w.uint32(tag(2, VARINT)).int64(o.version);
    w.ldelim();
  }
  return w.finish();
}

function checkSpec(spec: ModelSpec): void {
  const seen = new Set<string>();
  for (const t of spec.initializers) {
    if (seen.has(t.name)) throw new Error(`initializer "${t.name}" is defined twice`);
    seen.add(t.name);
  }
  if (!spec.opsets.some((o) => o.domain === '')) throw new Error('opsets: the ai.onnx domain ("") needs a version');
}

/** The whole model in memory (small models; a large one goes through writeOnnxModel). */
export function encodeOnnxModel(spec: ModelSpec): Uint8Array {
  checkSpec(spec);
  const parts: Buffer[] = [bytesOf(graphHead(spec))];
  for (const t of spec.initializers) {
    const w = Writer.create();
    w.uint32(tag(5, LEN));
    encodeTensor(w, t);
    parts.push(bytesOf(w.finish()));
  }
  const graph = Buffer.concat(parts);
  return Buffer.concat([bytesOf(modelHead(spec)), Buffer.from([tag(7, LEN)]), encodeLength(graph.length), graph]);
}

/**
 * Writes `spec` to `file`, one initializer at a time: the protobuf lengths are worked out before any
 * data is made, so memory holds one tensor, not the model. With `externalData`, the large
 * initializers go to that file beside it (data_location EXTERNAL, location/offset/length).
 */
export function writeOnnxModel(file: string, spec: ModelSpec, opts: WriteOptions = {}): WrittenModel {
  checkSpec(spec);
  const minBytes = opts.externalMinBytes ?? 1024;
  // pass 1: every initializer's encoded head and length, without making its data
  let offset = 0;
  const plans = spec.initializers.map((t) => {
    const count = t.dims.reduce((a, b) => a * b, 1);
    const byteLength = count * (t.type === 'float32' || t.type === 'int32' ? 4 : t.type === 'int64' ? 8 : t.type === 'float16' ? 2 : 1);
    const head = Buffer.from(tensorHead(t));
    if (opts.externalData && byteLength >= minBytes) {
      offset = Math.ceil(offset / EXTERNAL_ALIGN) * EXTERNAL_ALIGN;
      const w = Writer.create();
      for (const [k, v] of [
        ['location', opts.externalData],
        ['offset', String(offset)],
        ['length', String(byteLength)],
      ]) {
        w.uint32(tag(13, LEN)).fork().uint32(tag(1, LEN)).string(k).uint32(tag(2, LEN)).string(v).ldelim();
      }
      w.uint32(tag(14, VARINT)).int32(1);
      const body = Buffer.concat([head, bytesOf(w.finish())]);
      const plan = { t, byteLength, body, external: offset };
      offset += byteLength;
      return plan;
    }
    const body = Buffer.concat([head, Buffer.from([tag(9, LEN)]), encodeLength(byteLength)]);
    return { t, byteLength, body, external: -1 };
  });
  const head = Buffer.from(graphHead(spec));
  let graphLength = head.length;
  for (const p of plans) {
    const inner = p.body.length + (p.external < 0 ? p.byteLength : 0);
    graphLength += 1 + varintLength(inner) + inner;
  }
  const top = Buffer.concat([bytesOf(modelHead(spec)), Buffer.from([tag(7, LEN)]), encodeLength(graphLength)]);
  const fd = fs.openSync(file, 'w');
  const dataFd = opts.externalData ? fs.openSync(path.join(path.dirname(file), opts.externalData), 'w') : -1;
  let modelBytes = 0;
  let externalBytes = 0;
  const put = (b: Buffer) => {
    fs.writeSync(fd, b);
    modelBytes += b.length;
  };
  try {
    put(Buffer.concat([top, head]));
    for (const p of plans) {
      const data = p.t.data();
      checkTensor(p.t, data);
      const inner = p.body.length + (p.external < 0 ? p.byteLength : 0);
      put(Buffer.concat([Buffer.from([tag(5, LEN)]), encodeLength(inner), p.body]));
      if (p.external < 0) put(bytesOf(data));
      else {
        fs.writeSync(dataFd, bytesOf(data), 0, data.byteLength, p.external);
        externalBytes = Math.max(externalBytes, p.external + data.byteLength);
      }
    }
  } finally {
    fs.closeSync(fd);
    if (dataFd >= 0) fs.closeSync(dataFd);
  }
  if (modelBytes !== top.length + graphLength) throw new Error(`${file}: wrote ${modelBytes} bytes, planned ${top.length + graphLength}`);
  return { modelBytes, externalBytes };
}
