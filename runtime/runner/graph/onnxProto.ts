// The few ONNX protobuf pieces the load-time graph rewrites read and write (field numbers from onnx.proto), over raw bytes.
import protobuf from 'protobufjs/minimal.js';

const { Reader, Writer } = protobuf;

export const MODEL_GRAPH = 7;
export const MODEL_OPSET = 8;
export const GRAPH_NODE = 1;
export const GRAPH_INITIALIZER = 5;
export const GRAPH_INPUT = 11;
export const GRAPH_OUTPUT = 12;
export const GRAPH_VALUE_INFO = 13;
export const NODE_INPUT = 1;
export const NODE_OUTPUT = 2;
export const NODE_OP_TYPE = 4;
const NODE_NAME = 3;
const NODE_ATTRIBUTE = 5;
const VALUE_INFO_NAME = 1;
const VALUE_INFO_TYPE = 2;
const TYPE_TENSOR = 1;
const TENSOR_ELEM_TYPE = 1;
export const LENGTH_DELIMITED = 2;
/** TensorProto fields: an initializer's shape, element type, name, inline bytes, external data and where its data lies. */
export const TENSOR_DIMS = 1;
export const TENSOR_DATA_TYPE = 2;
export const TENSOR_NAME = 8;
export const TENSOR_RAW_DATA = 9;
export const TENSOR_EXTERNAL_DATA = 13;
export const TENSOR_DATA_LOCATION = 14;

/** ONNX element types used here. */
export const FLOAT = 1;
export const INT64 = 7;
export const BOOL = 9;
export const FLOAT16 = 10;

export interface Field {
  field: number;
  /** The field's payload when length-delimited. */
  bytes?: Uint8Array;
  /** The payload when a varint. */
  value?: number;
  /** The whole field as it was encoded (tag included), to copy unchanged. */
  raw: Uint8Array;
}

export function fields(buf: Uint8Array): Field[] {
  const r = Reader.create(buf);
  const out: Field[] = [];
  while (r.pos < r.len) {
    const start = r.pos;
    const tag = r.uint32();
    const wire = tag & 7;
    let bytes: Uint8Array | undefined;
    let value: number | undefined;
    if (wire === LENGTH_DELIMITED) bytes = r.bytes();
    else if (wire === 0) value = Number(r.int64());
    else r.skipType(wire);
    out.push({ field: tag >>> 3, bytes, value, raw: buf.subarray(start, r.pos) });
  }
  return out;
}

export const text = (b: Uint8Array | undefined): string => (b ? Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8') : '');

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  return Buffer.concat(parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength)));
}

/** One length-delimited field `field` holding `payload`. */
export function wrap(field: number, payload: Uint8Array): Uint8Array {
  const w = Writer.create();
  w.uint32((field << 3) | LENGTH_DELIMITED).bytes(payload);
  return w.finish();
}

/** A ValueInfoProto of a tensor of `elemType` named `name` (shape left to the model), as graph field `field`. */
export function valueInfo(field: number, name: string, elemType: number): Uint8Array {
  const w = Writer.create();
  w.uint32((field << 3) | LENGTH_DELIMITED).fork();
  w.uint32((VALUE_INFO_NAME << 3) | LENGTH_DELIMITED).string(name);
  w.uint32((VALUE_INFO_TYPE << 3) | LENGTH_DELIMITED).fork();
  w.uint32((TYPE_TENSOR << 3) | LENGTH_DELIMITED).fork();
  w.uint32(TENSOR_ELEM_TYPE << 3).int32(elemType);
  w.ldelim().ldelim().ldelim();
  return w.finish();
}

/** The name of a ValueInfoProto (graph input / output / value_info). */
export function valueInfoName(bytes: Uint8Array): string {
  return text(fields(bytes).find((f) => f.field === VALUE_INFO_NAME)?.bytes);
}

/** A node attribute: an int, ints, a float, a string, or a graph (`g`: a GraphProto's fields, If's branches). */
export type Attr = { name: string } & ({ i: number } | { ints: readonly number[] } | { f: number } | { s: string } | { g: Uint8Array });

/** A NodeProto as graph field GRAPH_NODE. */
export function node(op: string, inputs: readonly string[], outputs: readonly string[], attrs: readonly Attr[] = [], name = outputs[0]): Uint8Array {
  const w = Writer.create();
  w.uint32((GRAPH_NODE << 3) | LENGTH_DELIMITED).fork();
  for (const i of inputs) w.uint32((NODE_INPUT << 3) | LENGTH_DELIMITED).string(i);
  for (const o of outputs) w.uint32((NODE_OUTPUT << 3) | LENGTH_DELIMITED).string(o);
  w.uint32((NODE_NAME << 3) | LENGTH_DELIMITED).string(`tr/${name}`);
  w.uint32((NODE_OP_TYPE << 3) | LENGTH_DELIMITED).string(op);
  for (const a of attrs) {
    w.uint32((NODE_ATTRIBUTE << 3) | LENGTH_DELIMITED).fork();
    w.uint32((1 << 3) | LENGTH_DELIMITED).string(a.name);
    if ('f' in a) {
      w.uint32((2 << 3) | 5).float(a.f);
      w.uint32(20 << 3).int32(1);
    } else if ('s' in a) {
      w.uint32((4 << 3) | LENGTH_DELIMITED).string(a.s);
      w.uint32(20 << 3).int32(3);
    } else if ('g' in a) {
      w.uint32((6 << 3) | LENGTH_DELIMITED).bytes(a.g);
      w.uint32(20 << 3).int32(5);
    } else if ('i' in a) {
      w.uint32(3 << 3).int64(a.i);
      w.uint32(20 << 3).int32(2);
    } else {
      for (const v of a.ints) w.uint32(8 << 3).int64(v);
      w.uint32(20 << 3).int32(7);
    }
    w.ldelim();
  }
  w.ldelim();
  return w.finish();
}

/** A TensorProto initializer (graph field GRAPH_INITIALIZER) of int64 or float `values` with `dims`. */
export function initializer(name: string, elemType: typeof FLOAT | typeof INT64, dims: readonly number[], values: readonly number[]): Uint8Array {
  const raw = elemType === INT64 ? Buffer.from(BigInt64Array.from(values, (v) => BigInt(v)).buffer) : Buffer.from(Float32Array.from(values).buffer);
  const w = Writer.create();
  w.uint32((GRAPH_INITIALIZER << 3) | LENGTH_DELIMITED).fork();
  for (const d of dims) w.uint32(1 << 3).int64(d);
  w.uint32(2 << 3).int32(elemType);
  w.uint32((8 << 3) | LENGTH_DELIMITED).string(name);
  w.uint32((9 << 3) | LENGTH_DELIMITED).bytes(raw);
  w.ldelim();
  return w.finish();
}

export interface NodeInfo {
  op: string;
  inputs: string[];
  outputs: string[];
  /** The node's fields, to re-encode it with one input changed. */
  fields: Field[];
}

export function nodeInfo(bytes: Uint8Array): NodeInfo {
  const f = fields(bytes);
  return {
    op: text(f.find((n) => n.field === NODE_OP_TYPE)?.bytes),
    inputs: f.filter((n) => n.field === NODE_INPUT).map((n) => text(n.bytes)),
    outputs: f.filter((n) => n.field === NODE_OUTPUT).map((n) => text(n.bytes)),
    fields: f,
  };
}

/** `n` re-encoded (as graph field GRAPH_NODE) with its input number `index` renamed `to`. */
export function withInput(n: NodeInfo, index: number, to: string): Uint8Array {
  let k = -1;
  const parts = n.fields.map((f) => {
    if (f.field !== NODE_INPUT || ++k !== index) return f.raw;
    const w = Writer.create();
    w.uint32((NODE_INPUT << 3) | LENGTH_DELIMITED).string(to);
    return w.finish();
  });
  return wrap(GRAPH_NODE, concat(parts));
}

/** The default-domain opset the model imports (ModelProto.opset_import), 0 when it names none. */
export function defaultOpset(top: readonly Field[]): number {
  for (const f of top) {
    if (f.field !== MODEL_OPSET || !f.bytes) continue;
    const o = fields(f.bytes);
    const domain = text(o.find((x) => x.field === 1)?.bytes);
    if (domain === '' || domain === 'ai.onnx') return o.find((x) => x.field === 2)?.value ?? 0;
  }
  return 0;
}
